"""What starts work: a run, a sweep's job, ``rubric_runner.run``, resume, continue or regrade, as one request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from ..records import ConfigSources, RunKind
from .followup import FollowUp
from .signals import StopRequest


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
    follow_up: FollowUp | None = None
    """A follow-up turn on a finished run's thread."""
    regraded_from: Path | None = None
    """A regrade: the record dir whose transcripts are graded again."""
    regraded_with: tuple[str, ...] = ()
    """A regrade: the overrides it puts on the config of the run it grades."""
    regraded_after: Path | None = None
    """A repeat of a regrade: the record dir of the repeat before, whose scripted grader's place in its
    script this one goes on from (instead of the graded run's)."""
    sweep_dir: Path | None = None
    """A sweep's job: the sweep's dir."""
    composed: DictConfig | None = None
    """The config Hydra composed for a sweep's job, which is then not composed again."""
    stop: StopRequest | None = None
    """The command line's signal handling, checked at every checkpoint."""

    @property
    def kind(self) -> RunKind:
        """What the launch does."""
        if self.regraded_from is not None:
            return RunKind.REGRADE
        return RunKind.TURN if self.follow_up is not None else RunKind.RUN
