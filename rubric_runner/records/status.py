"""How a run ends: its status, what that status means, and the exit code of runs and sweeps.

This module is the one owner of exit codes: a run's comes from its ``Status``, a sweep's from
``sweep_exit_code``, and a usage or config error is ``ExitCode.USAGE`` everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum, StrEnum


class ExitCode(IntEnum):
    """Exit codes of the ``rubric-runner`` commands."""

    SATISFIED = 0
    UNSATISFIED = 1
    USAGE = 2
    """Bad config or usage: an unknown preset or key, a wrong type, a missing API key, a bad argument."""
    ERROR = 3
    BELOW_THRESHOLD = 4
    """A sweep or report whose satisfied rate is below ``fail_under``."""
    BUDGET_EXCEEDED = 5
    """A run or sweep stopped by its budget: tasks or jobs cut short or never started (resume to finish)."""
    INTERRUPTED = 130


class Outcome(StrEnum):
    """What a status amounts to for exit codes and reports."""

    SATISFIED = "satisfied"
    UNSATISFIED = "unsatisfied"
    ERROR = "error"


class Status(StrEnum):
    """The status of a run or task record."""

    RUNNING = "running"
    SATISFIED = "satisfied"
    MAX_ITERATIONS_REACHED = "max_iterations_reached"
    FAILED = "failed"
    UNSUPPORTED = "unsupported"
    """A satisfied verdict that rests on evidence its grading pass never gathered (or, with
    ``grader.strict_coverage``, that does not cover the rubric)."""
    LIMIT_EXCEEDED = "limit_exceeded"
    """The task reached one of its ``limits.*``."""
    GRADER_ERROR = "grader_error"
    ERROR = "error"
    NOT_RUN = "not_run"
    """The budget was spent before the task (or every task of the run) started."""
    BUDGET_EXCEEDED = "budget_exceeded"
    """The budget was spent while the task was under way: it stopped at its next model call."""
    INTERRUPTED = "interrupted"

    @classmethod
    def of_loop(cls, value: str | None) -> Status:
        """The status for what RubricMiddleware's state says when the loop stops: a terminal verdict
        is itself; none yet, or one still asking for revision (the loop was stopped), is ``error``."""
        status = cls.named(value)
        return status if status is not None and status.terminal else cls.ERROR

    @classmethod
    def named(cls, value: str | None) -> Status | None:
        """The status of that name; None for any other string."""
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            return None

    @property
    def severity(self) -> int:
        """Rank from best (satisfied) to worst (interrupted); a run takes its worst task's."""
        return _TRAITS[self][0]

    @property
    def exit_code(self) -> ExitCode:
        """The exit code of a run that ended with this status."""
        return _TRAITS[self][1]

    @property
    def outcome(self) -> Outcome:
        """Satisfied, unsatisfied, or error (anything else: a crash, a run still going, an interruption)."""
        return _TRAITS[self][2]

    @property
    def terminal(self) -> bool:
        """Whether the grading loop finished; resuming such a run does nothing."""
        return _TRAITS[self][3]

    @property
    def unfinished(self) -> bool:
        """Still going, interrupted, or kept from starting or cut short by a budget: resuming finishes it,
        and the reports count it beside their rates, never in them."""
        return self in (Status.RUNNING, Status.NOT_RUN, Status.BUDGET_EXCEEDED, Status.INTERRUPTED)

    @property
    def decided(self) -> bool:
        """The run ended satisfied or unsatisfied: the rates count it. A crash (``error``, ``grader_error``)
        and an unfinished run say nothing of the task, and are counted beside the rates, never in them."""
        return self.outcome is not Outcome.ERROR


_TRAITS: dict[Status, tuple[int, ExitCode, Outcome, bool]] = {
    Status.SATISFIED: (0, ExitCode.SATISFIED, Outcome.SATISFIED, True),
    Status.MAX_ITERATIONS_REACHED: (1, ExitCode.UNSATISFIED, Outcome.UNSATISFIED, True),
    Status.FAILED: (2, ExitCode.UNSATISFIED, Outcome.UNSATISFIED, True),
    Status.UNSUPPORTED: (3, ExitCode.UNSATISFIED, Outcome.UNSATISFIED, True),
    Status.LIMIT_EXCEEDED: (4, ExitCode.UNSATISFIED, Outcome.UNSATISFIED, True),
    Status.GRADER_ERROR: (5, ExitCode.ERROR, Outcome.ERROR, True),
    Status.RUNNING: (6, ExitCode.ERROR, Outcome.ERROR, False),
    Status.ERROR: (7, ExitCode.ERROR, Outcome.ERROR, False),
    Status.NOT_RUN: (8, ExitCode.BUDGET_EXCEEDED, Outcome.ERROR, False),
    Status.BUDGET_EXCEEDED: (9, ExitCode.BUDGET_EXCEEDED, Outcome.ERROR, False),
    Status.INTERRUPTED: (10, ExitCode.INTERRUPTED, Outcome.ERROR, False),
}


def satisfied_rate(statuses: Iterable[Status]) -> float | None:
    """The satisfied rate: of the decided runs (``Status.decided``), those that ended satisfied; None when
    no run was decided. Every satisfied rate the records, the reports and the console give is this one."""
    decided = [status for status in statuses if status.decided]
    return sum(status is Status.SATISFIED for status in decided) / len(decided) if decided else None


def gated_share(statuses: Iterable[Status]) -> float:
    """What ``fail_under`` gates: the share of every run that ended satisfied, a crash or an unfinished
    run counting as not satisfied (no crash passes a gate); 0 for no run."""
    statuses = list(statuses)
    return sum(status is Status.SATISFIED for status in statuses) / len(statuses) if statuses else 0.0


def sweep_exit_code(statuses: Iterable[Status], fail_under: float | None = None) -> ExitCode:
    """0 all satisfied, 1 some unsatisfied, 3 some in error, 5 some stopped by the budget (and none in
    error otherwise); with ``fail_under``: 0 or 4 by ``gated_share``."""
    statuses = list(statuses)
    if fail_under is not None:
        return ExitCode.SATISFIED if gated_share(statuses) >= fail_under else ExitCode.BELOW_THRESHOLD
    outcomes = {status.outcome for status in statuses}
    if Outcome.ERROR in outcomes:
        unfinished = {status.exit_code for status in statuses if status.outcome is Outcome.ERROR}
        return ExitCode.BUDGET_EXCEEDED if unfinished == {ExitCode.BUDGET_EXCEEDED} else ExitCode.ERROR
    return ExitCode.UNSATISFIED if Outcome.UNSATISFIED in outcomes else ExitCode.SATISFIED
