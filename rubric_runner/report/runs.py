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
from ..records import TASKS_DIR, UNFINISHED, CheckOutcome, Job, LimitHit, RunRecord, Status, load_record
from ..records.store import gc_paused
from .trails import script_json, trail

TASK_CHARS = 80
"""A single-task job's task is named by its task message, cut to this many characters."""


def group_key(record: RunRecord) -> tuple[str, str, str]:
    """(worker model, grader model, rubric name) of a run; ``?`` where unknown. A follow-up turn
    groups apart from first turns, its rubric shown as ``code (turn 2)``."""
    rubric = record.rubric.name or "?"
    return record.worker.model or "?", record.grader.model or "?", f"{rubric} (turn {record.turn})" if record.turn else rubric


def record_row(record: RunRecord) -> dict[str, Any]:
    """What ran and how it ended, as the summary files give it (of a run, or of a whole job)."""
    usage, error = record.usage, record.error
    return {
        "worker": record.worker.model,
        "grader": record.grader.model,
        "rubric": record.rubric.name,
        "turn": record.turn or 1,
        "status": record.status.value,
        "exit_code": record.exit_code,
        "iterations": record.iterations,
        "worker_tokens": usage["worker"].total_tokens if "worker" in usage else 0,
        "grader_tokens": usage["grader"].total_tokens if "grader" in usage else 0,
        "cache_hits": sum(counts.cached_calls for counts in usage.values()),
        "wall_seconds": record.wall_seconds,
        "error": f"{error.type}: {error.message}" if error else "",
        "run_dir": record.run_dir,
        "verified_first": record.verified("first"),
        "verified_final": record.verified("final"),
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


def _criteria(record: RunRecord, shared: _Shared) -> tuple[Criteria, Criteria] | None:
    graded = [e for e in record.evaluations if e.criteria]
    if not graded:
        return None
    first, final = ((shared((shared(c.name.strip()), c.passed)) for c in e.criteria) for e in (graded[0], graded[-1]))
    return shared(tuple(first)), shared(tuple(final))


def _run(index: int, job: Job, record: RunRecord, reused: bool, shared: _Shared) -> Run:
    message = " ".join((record.rubric.task or "").split()) or "-"
    task = record.task_id or (message if len(message) <= TASK_CHARS else message[:TASK_CHARS] + "\u2026")
    final = record.verification.final if record.verification else None
    row = record_row(record)
    del row["status"]
    for key in ("worker", "grader", "rubric"):
        row[key] = shared(row[key])
    return Run(
        index=index, job=job, reused=reused, task=task, task_id=record.task_id, repeat=record.repeat,
        group=shared(group_key(record)), **row, status=record.status,
        verified_outcome=final.outcome if final else None, max_iterations=record.grader.max_iterations or 0,
        verdicts=shared(tuple(shared(e.result) for e in record.evaluations)), criteria=_criteria(record, shared),
        billed=billed(record), limit=record.limit,
        grader_key=shared(grader_key(record)),
        trail=script_json(trail(record)),
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


def _task_record(job: Job, task_dir: Path, live: bool) -> RunRecord:
    """A task's record; what ran filled from its job's record where the task's does not say."""
    record = load_record(task_dir)
    parent = job.record
    if record.task_id is None:
        record.task_id, record.repeat = _task_order(task_dir.name)
    for part in ("worker", "grader", "rubric"):
        if getattr(record, part).model_dump(exclude_defaults=True) == {}:
            setattr(record, part, getattr(parent, part))
    record.overrides = record.overrides or parent.overrides
    record.run_dir = str(task_dir)
    _mark_running(record, live)
    return record


def _mark_running(record: RunRecord, live: bool) -> None:
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
            runs.append(_run(len(runs), job, job.record, bool(job.reused), shared))
            continue
        reused = {f"{row.task_id}-r{row.repeat}" for row in job.record.tasks if row.reused}
        for task_dir in task_dirs:
            record = _task_record(job, task_dir, live)
            runs.append(_run(len(runs), job, record, task_dir.name in reused, shared))
    return runs
