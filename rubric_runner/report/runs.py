"""Jobs expanded into the runs the reports count: a multi-task job is its tasks x repeats.

This is the one place that does it; the summary files, both reports, the sweep's exit code and
``fail_under`` all count what ``expand`` returns. A single-task job is one run, its own record.
A multi-task job's runs are the records in its ``tasks/`` dir, in its record's task order (or by
name, while it runs or after it crashed); a task that left no record still counts, in error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..records import TASKS_DIR, UNFINISHED, Job, RunRecord, Status, load_record
from ..records.store import gc_paused

TASK_CHARS = 80
"""A single-task job's task is named by its task message, cut to this many characters."""


@dataclass(frozen=True)
class Run:
    """One task x repeat of a job (or a single-task job), as the reports count it."""

    index: int
    job: Job
    record: RunRecord
    reused: bool
    """A resumed run or sweep kept this run as it was."""

    @property
    def task(self) -> str:
        """The task's id; for a single-task job, its task message (whitespace collapsed, cut to
        ``TASK_CHARS``), or ``-``. Runs with the same task and rubric are the same task."""
        if self.record.task_id:
            return self.record.task_id
        message = " ".join((self.record.rubric.task or "").split()) or "-"
        return message if len(message) <= TASK_CHARS else message[:TASK_CHARS] + "\u2026"


def _task_dirs(job: Job) -> list[Path]:
    root = Path(job.record.run_dir or ".") / TASKS_DIR
    if job.record.tasks:
        return [root / f"{row.task_id}-r{row.repeat}" for row in job.record.tasks]
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir()), key=_task_order)


def _task_order(task_dir: Path) -> tuple[str, int]:
    task, _, repeat = task_dir.name.rpartition("-r")
    return task, int(repeat) if repeat.isdigit() else -1


def _task_record(job: Job, task_dir: Path, live: bool) -> RunRecord:
    """A task's record; what ran filled from its job's record where the task's does not say."""
    record = load_record(task_dir)
    parent = job.record
    if record.task_id is None:
        record.task_id, record.repeat = _task_order(task_dir)
    for part in ("worker", "grader", "rubric"):
        if getattr(record, part).model_dump(exclude_defaults=True) == {}:
            setattr(record, part, getattr(parent, part).model_copy())
    record.overrides = record.overrides or list(parent.overrides)
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
    for job in jobs:
        _mark_running(job.record, live)
        task_dirs = _task_dirs(job)
        if not task_dirs:
            runs.append(Run(len(runs), job, job.record, bool(job.reused)))
            continue
        reused = {f"{row.task_id}-r{row.repeat}" for row in job.record.tasks if row.reused}
        for task_dir in task_dirs:
            runs.append(Run(len(runs), job, _task_record(job, task_dir, live), task_dir.name in reused))
    return runs
