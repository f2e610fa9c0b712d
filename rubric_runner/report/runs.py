"""Jobs expanded into the runs the reports count: a multi-task job is its tasks x repeats.

This is the one place that does it; the summary files, both reports, the sweep's exit code and
``fail_under`` all count what ``expand`` returns. A single-task job is one run, its own record.
A multi-task job's runs are the records in its ``tasks/`` dir, in its record's task order (or by
name, while it runs or after it crashed); a task that left no record still counts, in error.

A ``Run`` keeps what the reports read of its record, taken as the record is read, and not the record:
a report of 10,000 tasks holds 10,000 of these at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.judge import Judged, Judgement, grader_key, judge_all
from ..analysis.prices import Billed, billed, cost_of
from ..records import (
    TASKS_DIR,
    UNFINISHED,
    CheckOutcome,
    Job,
    LimitHit,
    RunHeader,
    RunRecord,
    Status,
    TaskRecord,
    load_task,
)
from ..records.store import gc_paused
from .trails import script_json, trail

TASK_CHARS = 80
"""A single-task job's task is named by its task message, cut to this many characters."""


def group_key(header: RunHeader) -> tuple[str, str, str]:
    """(worker model, grader model, rubric name) of a run; ``?`` where unknown. A follow-up turn
    groups apart from first turns, its rubric shown as ``code (turn 2)``."""
    rubric = header.rubric.name or "?"
    return header.worker.model or "?", header.grader.model or "?", f"{rubric} (turn {header.turn})" if header.turn else rubric


def record_row(header: RunHeader, record: RunRecord | TaskRecord) -> dict[str, Any]:
    """What ran and how it ended, as the summary files give it: of a task, or of a whole job (a run's record)."""
    task = record.task if isinstance(record, RunRecord) else record
    usage = record.task_usage() if isinstance(record, RunRecord) else record.usage
    iterations = record.grading_passes() if isinstance(record, RunRecord) else record.iterations
    error = record.error
    return {
        "worker": header.worker.model,
        "grader": header.grader.model,
        "rubric": header.rubric.name,
        "turn": header.turn or 1,
        "status": record.status.value,
        "exit_code": record.exit_code,
        "iterations": iterations,
        "worker_tokens": usage["worker"].total_tokens if "worker" in usage else 0,
        "grader_tokens": usage["grader"].total_tokens if "grader" in usage else 0,
        "cache_hits": sum(counts.cached_calls for counts in usage.values()),
        "wall_seconds": record.wall_seconds,
        "error": f"{error.type}: {error.message}" if error else "",
        "run_dir": record.run_dir,
        "verified_first": task.verified("first") if task is not None else None,
        "verified_final": task.verified("final") if task is not None else None,
    }


Criteria = tuple[tuple[str, bool], ...]
"""A grading pass's criteria: (name, passed) each, names stripped."""


@dataclass(frozen=True, slots=True)
class Run:
    """One task x repeat of a job (or a single-task job), as the reports count it: ``record_row``'s
    fields, and what the tables, the judgement and the trail read of the record."""

    index: int
    job: Job
    reused: bool
    """A resumed run or sweep kept this run as it was."""
    task: str
    """The task's id; for a single-task job, its task message (whitespace collapsed, cut to
    ``TASK_CHARS``), or ``-``. Runs with the same task and rubric are the same task."""
    task_id: str | None
    repeat: int | None
    group: tuple[str, str, str]
    """``group_key`` of the record."""
    status: Status
    worker: str | None
    grader: str | None
    rubric: str | None
    turn: int
    exit_code: int | None
    iterations: int
    worker_tokens: int
    grader_tokens: int
    cache_hits: int
    wall_seconds: float | None
    error: str
    run_dir: str | None
    verified_first: bool | None
    verified_final: bool | None
    verified_outcome: CheckOutcome | None
    """The final answer's verification outcome; None when it was not verified."""
    max_iterations: int
    verdicts: tuple[str, ...]
    """Each grading pass's verdict."""
    criteria: tuple[Criteria, Criteria] | None
    """The first and the final pass that graded criteria; None when none did."""
    billed: Billed
    limit: LimitHit | None
    grader_key: tuple[str, str]
    """``judge.grader_key`` of the record: who judged the run."""
    trail: str
    """The verdict trail report.html draws (``trails.trail``), as page-safe JSON."""

    def cost(self, prices: dict[str, dict[str, float]]) -> float | None:
        """Estimated USD of the run; None when a model has no price."""
        return cost_of(self.billed, prices)

    def judged(self, prices: dict[str, dict[str, float]]) -> Judged:
        """What a judgement reads of the run."""
        return Judged(
            satisfied=self.status is Status.SATISFIED, verified_first=self.verified_first,
            verified_final=self.verified_final, verified_outcome=self.verified_outcome,
            tokens=self.worker_tokens + self.grader_tokens, cost=self.cost(prices),
        )


def judge_runs(runs: list[Run], prices: dict[str, dict[str, float]]) -> Judgement | None:
    """The judgement of ``runs``; None when none of them was verified."""
    if all(run.verified_outcome is None for run in runs):
        return None
    return judge_all([run.judged(prices) for run in runs])


class _Shared(dict):
    """One object for equal values across runs (models, criteria, verdicts, groups): 10,000 runs hold few copies."""

    def __call__(self, value: Any) -> Any:
        return self.setdefault(value, value)


def _criteria(record: TaskRecord, shared: _Shared) -> tuple[Criteria, Criteria] | None:
    graded = [e for e in record.evaluations if e.criteria]
    if not graded:
        return None
    first, final = ((shared((shared(c.name.strip()), c.passed)) for c in e.criteria) for e in (graded[0], graded[-1]))
    return shared(tuple(first)), shared(tuple(final))


def _run(index: int, job: Job, record: TaskRecord, reused: bool, shared: _Shared) -> Run:
    header = job.record.header
    message = " ".join((record.task or header.rubric.task or "").split()) or "-"
    task = record.task_id or (message if len(message) <= TASK_CHARS else message[:TASK_CHARS] + "\u2026")
    final = record.verification.final if record.verification else None
    row = record_row(header, record)
    del row["status"]
    for key in ("worker", "grader", "rubric"):
        row[key] = shared(row[key])
    return Run(
        index=index, job=job, reused=reused, task=task, task_id=record.task_id, repeat=record.repeat,
        group=shared(group_key(header)), **row, status=record.status,
        verified_outcome=final.outcome if final else None, max_iterations=header.grader.max_iterations or 0,
        verdicts=shared(tuple(shared(e.result) for e in record.evaluations)), criteria=_criteria(record, shared),
        billed=billed(header, record.usage), limit=record.limit,
        grader_key=shared(grader_key(header)),
        trail=script_json(trail(header, record)),
    )


def _task_dirs(job: Job) -> list[Path]:
    root = os.path.join(job.record.run_dir or ".", TASKS_DIR)
    if job.record.tasks:
        names = [f"{row.task_id}-r{row.repeat}" for row in job.record.tasks]
    else:
        try:
            with os.scandir(root) as entries:
                names = sorted((entry.name for entry in entries if entry.is_dir()), key=_task_order)
        except (FileNotFoundError, NotADirectoryError):
            return []
    root_path = Path(root)
    return [root_path / name for name in names]


def _task_order(name: str) -> tuple[str, int]:
    task, _, repeat = name.rpartition("-r")
    return task, int(repeat) if repeat.isdigit() else -1


def _task_record(task_dir: Path, live: bool) -> TaskRecord:
    """A task's record, where it is now."""
    record = load_task(task_dir)
    if record.task_id is None:
        record.task_id, record.repeat = _task_order(task_dir.name)
    record.run_dir = str(task_dir)
    _mark_running(record, live)
    return record


def _mark_running(record: RunRecord | TaskRecord, live: bool) -> None:
    """In a report of runs still going, a record that says ``running`` is one, not a crash."""
    if live and record.error is not None and record.error.type == UNFINISHED:
        record.status, record.error, record.exit_code = Status.RUNNING, None, None


@gc_paused()
def expand(jobs: list[Job], live: bool = False) -> list[Run]:
    """Every run of ``jobs``: each task x repeat of a multi-task job, each single-task job itself.

    ``live``: the jobs may still be going, so records that still say ``running`` are shown as such.
    """
    runs: list[Run] = []
    shared = _Shared()
    for job in jobs:
        _mark_running(job.record, live)
        task_dirs = _task_dirs(job)
        if not task_dirs:
            task = job.record.task or _unstarted(job.record)
            _mark_running(task, live)
            runs.append(_run(len(runs), job, task, bool(job.reused), shared))
            continue
        reused = {f"{row.task_id}-r{row.repeat}" for row in job.record.tasks if row.reused}
        for task_dir in task_dirs:
            record = _task_record(task_dir, live)
            runs.append(_run(len(runs), job, record, task_dir.name in reused, shared))
    return runs


def _unstarted(record: RunRecord) -> TaskRecord:
    """The task of a run that ended before its task began (a config error, a crash): as the run ended."""
    return TaskRecord(status=record.status, exit_code=record.exit_code, error=record.error, run_dir=record.run_dir,
                      wall_seconds=record.wall_seconds, task=record.header.rubric.task)
