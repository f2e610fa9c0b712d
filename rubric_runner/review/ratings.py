"""The ratings the agreement figures read: one per graded record under a dir (a run's tasks, or a
regrade's passes), with its grader, transcript, verdict, criteria and hidden check."""

from __future__ import annotations

import re
from pathlib import Path

from ..analysis.agreement import Rating
from ..analysis.judge import VERDICTS
from ..records import RunRecord, TaskRecord, collect, task_records


def _overrides(record: RunRecord) -> list[str]:
    """A regrade's overrides, Hydra's escapes undone, its console's left out (they change no verdict)."""
    shown = (re.sub(r"\\(.)", r"\1", o) for o in record.header.regraded_with or [])
    return [o for o in shown if not o.lstrip("+~").startswith("run.console")]


def grader_names(records: list[RunRecord]) -> list[str]:
    """Who graded each run: the regrade's overrides that differ between the graders (all of them when there
    is one grader: ``grader.script=...``), else the grader model."""
    overrides = [_overrides(record) for record in records]
    distinct = {tuple(o) for o in overrides}
    shared = set.intersection(*map(set, overrides)) if len(distinct) > 1 else set()
    return [" ".join(o for o in own if o not in shared) or record.header.grader.model or "grader"
            for own, record in zip(overrides, records)]


def rating(grader: str, task: TaskRecord) -> Rating:
    """One task record as a rating: its final pass's verdict and criteria."""
    verdict = VERDICTS.get(task.status)
    graded = [e for e in task.evaluations if e.criteria]
    criteria = tuple((c.name.strip(), c.passed) for c in graded[-1].criteria) if graded and verdict is not None else ()
    item = task.regraded_from or task.run_dir or ""
    return Rating(grader=grader, item=str(Path(item).resolve()) if item else item, verdict=verdict, criteria=criteria,
                  checked=task.verified("final"), task=task.task_id or item,
                  status=None if verdict is not None else task.status, first_checked=task.verified("first"))


def ratings_in(root: Path) -> list[Rating]:
    """Every record under ``root`` as a rating, in job order."""
    records = [job.record for job in collect(root)]
    return [rating(name, task) for name, record in zip(grader_names(records), records) for task in task_records(record)]
