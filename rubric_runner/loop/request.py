"""What starts work: a run, a sweep's job, ``rubric_runner.run``, resume, continue or regrade, as one request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from ..records import ConfigSources, RunKind
from .followup import FollowUp
from .signals import StopRequest


@dataclass(frozen=True)
class Regrading:
    """A regrade: the record dir whose transcripts are graded again, and the overrides it puts on the config
    of the run it grades."""

    source: Path
    overrides: tuple[str, ...] = ()
    after: Path | None = None
    """A repeat of a regrade: the record dir of the repeat before, whose scripted grader's place in its script
    this one goes on from (instead of the graded run's)."""


@dataclass(frozen=True)
class Launch:
    """What starts work: where its config comes from, where its records go, and what kind of work it is."""

    sources: ConfigSources
    run_dir: Path | None = None
    """None: the composed config's ``hydra.run.dir``."""
    key: str = "hydra.run.dir"
    """The config key or argument ``run_dir`` came from, for errors about it."""
    resume: bool = False
    """Continue the run in ``run_dir`` (also set by ``run.resume=true``)."""
    work: FollowUp | Regrading | None = None
    """What the work is when it is not a new run: a follow-up turn on a finished run's thread, or a regrade."""
    sweep_dir: Path | None = None
    """A sweep's job: the sweep's dir."""
    composed: DictConfig | None = None
    """The config Hydra composed for a sweep's job, which is then not composed again."""
    stop: StopRequest | None = None
    """The command line's signal handling, checked at every checkpoint."""

    @property
    def kind(self) -> RunKind:
        """What the launch does."""
        return RunKind.REGRADE if self.regrading else RunKind.TURN if self.follow_up else RunKind.RUN

    @property
    def follow_up(self) -> FollowUp | None:
        """The follow-up turn this launch is, if it is one."""
        return self.work if isinstance(self.work, FollowUp) else None

    @property
    def regrading(self) -> Regrading | None:
        """The regrade this launch is, if it is one."""
        return self.work if isinstance(self.work, Regrading) else None
