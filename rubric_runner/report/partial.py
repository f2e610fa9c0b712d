"""How much of a set of runs is done: the ``partial:`` line every output gives when runs did not
finish or jobs did not start, the progress line of runs still going, and how many jobs a sweep planned.

Unfinished runs (``Status.unfinished``: still going, interrupted, kept from starting or cut short by a
budget) are counted beside the rates, never in them; a job that did not start is counted as such,
never as a task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..records import Job, Status
from .runs import Run, unstarted

if TYPE_CHECKING:
    from omegaconf import Container

MULTIRUN_FILE = "multirun.yaml"
"""What Hydra's basic sweeper saves in a sweep dir: the sweep's config, whose overrides say its jobs."""


def planned_overrides(config: Container) -> list[list[str]] | None:
    """Each job's overrides, as Hydra's basic sweeper makes them of a sweep's config (its ``hydra`` node),
    in the order it numbers the jobs; None for another sweeper."""
    from omegaconf import OmegaConf

    from ..compat.hydra import combinations

    if "BasicSweeper" not in str(OmegaConf.select(config, "hydra.sweeper._target_")):
        return None
    task = OmegaConf.select(config, "hydra.overrides.task")
    # as typed: ${...} unresolved; a list of strings (to_container's annotation allows any node)
    typed = cast("list[str]", OmegaConf.to_container(task, resolve=False)) if task is not None else []
    return combinations(typed)


def planned_jobs(config: Container) -> int | None:
    """How many jobs Hydra's basic sweeper makes of a sweep's config; None for another sweeper."""
    planned = planned_overrides(config)
    return None if planned is None else len(planned)


def planned_jobs_in(root: Path) -> int | None:
    """How many jobs the sweep in ``root`` planned, from its ``multirun.yaml``; None when not known."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = root / MULTIRUN_FILE
    if not path.is_file():
        return None
    try:
        return planned_jobs(OmegaConf.load(path))
    except (OSError, ValueError, yaml.YAMLError, OmegaConfBaseException, HydraException):  # unreadable: not known
        return None


@dataclass(frozen=True)
class Completion:
    """How many runs finished of how many, and how many jobs did not start."""

    finished: int
    runs: int
    unstarted: int
    """Jobs that ended before a task began, and jobs of the sweep never launched."""
    live: bool = False

    @property
    def partial(self) -> bool:
        return self.finished < self.runs or self.unstarted > 0

    def line(self) -> str | None:
        """``partial: 2 of 10 runs finished, 1 job not started``; None when everything finished."""
        if not self.partial:
            return None
        jobs = f", {self.unstarted} job{'' if self.unstarted == 1 else 's'} not started" if self.unstarted else ""
        return f"partial: {self.finished} of {self.runs} runs finished{jobs}"


def completion(jobs: list[Job], runs: list[Run], jobs_total: int | None = None, runs_total: int | None = None,
               live: bool = False) -> Completion:
    """The completion of ``runs`` of ``jobs``; ``jobs_total`` and ``runs_total``: how many there will be,
    where known (a sweep's planned jobs, a running task set's runs)."""
    first_turns = [job for job in jobs if "turns/" not in job.job]
    never_launched = max(0, (jobs_total or 0) - len(first_turns))
    total = max(runs_total or 0, len(runs))
    return Completion(sum(run.finished for run in runs), total, len(unstarted(jobs, runs)) + never_launched, live)


def progress_line(jobs: list[Job], runs: list[Run], jobs_total: int | None, runs_total: int | None) -> str:
    """``3 of 6 jobs done, 47 runs done`` (of one job: ``47 of 120 runs done``): how far a sweep or a
    run still going has come."""
    def done(statuses: list[Status], total: int | None, noun: str) -> str:
        finished = sum(status is not Status.RUNNING for status in statuses)
        if total:
            return f"{finished} of {max(total, len(statuses))} {noun}s done"
        return f"{finished} {noun}{'' if finished == 1 else 's'} done"

    run_statuses = [run.status for run in runs]
    if len(jobs) == 1 and jobs_total == 1:
        return done(run_statuses, runs_total, "run")
    return f"{done([job.record.status for job in jobs], jobs_total, 'job')}, {done(run_statuses, runs_total, 'run')}"
