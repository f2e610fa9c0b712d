"""The ratings the agreement figures read: each run (a run's task, or a regrade's pass) as one grading of its
transcript (``Run.rating``), named by who graded it."""

from __future__ import annotations

import re
from pathlib import Path

from ..analysis.agreement import Rating
from ..paths import Resolver
from ..records import Job, RunRecord, collect
from .runs import Run, expand


def _overrides(record: RunRecord) -> list[str]:
    """A regrade's overrides, Hydra's escapes undone, its console's left out (they change no verdict)."""
    shown = (re.sub(r"\\(.)", r"\1", o) for o in record.header.regraded_with or [])
    return [o for o in shown if not o.lstrip("+~").startswith("run.console")]


def grader_names(jobs: list[Job]) -> list[str]:
    """Who graded each job: the regrade's overrides that differ between the graders (all of them when there
    is one grader: ``grader.script=...``), else the grader model."""
    overrides = [_overrides(job.record) for job in jobs]
    distinct = {tuple(o) for o in overrides}
    shared = set.intersection(*map(set, overrides)) if len(distinct) > 1 else set()
    return [" ".join(o for o in own if o not in shared) or job.record.header.grader.model or "grader"
            for own, job in zip(overrides, jobs)]


def ratings_of(runs: list[Run]) -> list[Rating]:
    """Each of ``runs`` as a rating, its grader named by ``grader_names`` of the jobs they came from."""
    jobs = list({id(run.job): run.job for run in runs}.values())
    names = {id(job): name for job, name in zip(jobs, grader_names(jobs))}
    resolved = Resolver()
    return [run.rating(names[id(run.job)], resolved) for run in runs]


def ratings_in(root: Path) -> list[Rating]:
    """Every run of the records under ``root`` as a rating, in job order."""
    return ratings_of(expand(collect(root)))
