"""JUnit XML of runs, so any CI system shows rubric results natively (``report DIR --junit FILE``).

One ``testsuite`` per configuration, one ``testcase`` per task x repeat (``classname``: the rubric,
``name``: the task and repeat). A satisfied run passes; a run that ended unsatisfied is a
``failure`` whose message is the grader's gaps from its last grading pass; a grader or runtime error
is an ``error``; a run not finished (still going, interrupted, stopped by a budget) is ``skipped``.
The XML is built a testcase at a time, reading each task's record once, and written whole (``write_atomic``).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from ..records import Outcome, RunHeader, TaskRecord, read_task_at, write_atomic
from . import configs
from .runs import Run

MESSAGE_CHARS = 2000
"""The most characters of a failure message (its body holds every failing criterion)."""
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    """``value`` as text XML 1.0 may hold."""
    return _NOT_XML.sub("\ufffd", str(value))


def _attr(value: object) -> str:
    return quoteattr(_text(value))


def kind(run: Run) -> str:
    """``passed``, ``failure``, ``error`` or ``skipped``."""
    if run.status.unfinished:
        return "skipped"
    outcome = run.status.outcome
    return "passed" if outcome is Outcome.SATISFIED else "failure" if outcome is Outcome.UNSATISFIED else "error"


def gaps(record: TaskRecord | None) -> list[str]:
    """The failing criteria of the last grading pass that graded any, each ``name: gap``."""
    graded = [evaluation for evaluation in (record.evaluations if record else []) if evaluation.criteria]
    if not graded:
        return []
    return [f"{c.name}: {c.gap}" if c.gap else c.name for c in graded[-1].criteria if not c.passed]


def _failure(run: Run, record: TaskRecord | None) -> tuple[str, str]:
    """The message and body of a failed or errored run."""
    found = gaps(record)
    explanation = record.evaluations[-1].explanation if record and record.evaluations else ""
    message = "; ".join(found) or run.error or explanation or str(run.status)
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "\u2026"
    body = [f"status: {run.status}", f"iterations: {run.iterations}"]
    body += [f"explanation: {explanation}"] if explanation else []
    body += [f"- {gap}" for gap in found]
    body += [f"error: {run.error}"] if run.error else []
    if run.verified_final is not None:
        body.append(f"hidden checks of the final answer: {'passed' if run.verified_final else 'failed'}")
    return message, "\n".join(body)


def _record(run: Run) -> TaskRecord | None:
    """The run's task record, read from the task's dir (a version 1 or 2 run of one task: the run's own)."""
    if run.job.record.inline_task is not None:
        return run.job.record.inline_task
    return read_task_at(Path(run.run_dir)) if run.run_dir else None


def _testcase(out: TextIO, run: Run, label: str) -> None:
    name = run.task if run.repeat is None else f"{run.task} [r{run.repeat}]"
    seconds = f"{run.wall_seconds or 0:.3f}"
    out.write(f"    <testcase classname={_attr(run.rubric or label)} name={_attr(name)} time=\"{seconds}\">\n")
    out.write("      <properties>\n")
    for key, value in (("status", run.status), ("iterations", run.iterations), ("verified_final", run.verified_final),
                       ("run_dir", run.run_dir)):
        if value is not None:
            shown = str(value).lower() if isinstance(value, bool) else value
            out.write(f"        <property name=\"{key}\" value={_attr(shown)}/>\n")
    out.write("      </properties>\n")
    what = kind(run)
    if what == "skipped":
        out.write(f"      <skipped message={_attr(f'not finished: {run.status}')}/>\n")
    elif what != "passed":
        message, body = _failure(run, _record(run))
        out.write(f"      <{what} message={_attr(message)} type={_attr(run.status)}>{escape(_text(body))}</{what}>\n")
    out.write("    </testcase>\n")


def write_junit(path: Path, runs: list[Run]) -> Path:
    """Write the runs as JUnit XML to ``path`` (atomically); returns it."""
    groups: dict[str, list[Run]] = {}
    headers: dict[str, RunHeader] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
        headers.setdefault(run.group, run.job.record.header)
    labels = configs.group_labels(headers.items())
    path.parent.mkdir(parents=True, exist_ok=True)
    with io.StringIO() as out:
        counts = [kind(run) for run in runs]
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(f'<testsuites name="rubric_runner" tests="{len(runs)}" failures="{counts.count("failure")}" '
                  f'errors="{counts.count("error")}" skipped="{counts.count("skipped")}">\n')
        for key, members in groups.items():
            kinds = [kind(run) for run in members]
            seconds = sum(run.wall_seconds or 0 for run in members)
            out.write(f"  <testsuite name={_attr(labels[key])} tests=\"{len(members)}\" failures=\"{kinds.count('failure')}\" "
                      f"errors=\"{kinds.count('error')}\" skipped=\"{kinds.count('skipped')}\" time=\"{seconds:.3f}\">\n")
            for run in members:
                _testcase(out, run, labels[key])
            out.write("  </testsuite>\n")
        out.write("</testsuites>\n")
        write_atomic(path, out.getvalue())
    return path
