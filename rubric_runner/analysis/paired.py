"""One paired comparison, used by every figure that sets two outcomes of the same cases side by side: the
first attempt against the final answer (the loop's lift), a control arm against the rubric loop, the runs
as they ran against a policy's replay, BASE against NEW (``compare``).

A case is one task's pair of outcomes, the control's and the treatment's: both passed, the control only
(lost), the treatment only (gained), or neither. The difference is the treatment's pass rate minus the
control's. When no task has several cases, the cases are independent pairs: Newcombe's paired interval
and the exact McNemar p. When a task has several (repeats, turns), they are not: the interval is the
task-cluster bootstrap's under ``intervals``' rule (else none, and why), and the p the sign test on tasks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import cached_property

from .intervals import Interval, cluster_bootstrap, mcnemar, no_interval, paired_difference, sign_test
from .numbers import fmt_interval, fmt_p, fmt_pts

Counts = tuple[int, int, int, int]
"""Cases by outcome: (both passed, control only, treatment only, neither)."""
MCNEMAR, SIGN_TEST = "exact McNemar", "sign test on tasks"
"""The names of ``PairedRates.p``'s test: on independent cases, or on tasks whose cases repeat."""


def _difference(counts: tuple[int, ...]) -> float | None:
    """The treatment's pass rate minus the control's, from ``Counts``."""
    n = sum(counts)
    return (counts[2] - counts[1]) / n if n else None


@dataclass(frozen=True)
class PairedRates:
    """The cases of each task (``Counts`` each, tasks with no case left out), and the figures on them."""

    per_task: tuple[Counts, ...] = ()

    @classmethod
    def of(cls, cases: Iterable[tuple[Hashable, bool | None, bool | None]]) -> PairedRates:
        """From (task, the control's outcome, the treatment's) each; a case counts when both are known."""
        found: dict[Hashable, list[int]] = {}
        for task, control, treatment in cases:
            if control is None or treatment is None:
                continue
            counts = found.setdefault(task, [0, 0, 0, 0])
            counts[(0 if control else 3) if control == treatment else (1 if control else 2)] += 1
        return cls(tuple((both, lost, gained, neither) for both, lost, gained, neither in found.values()))

    @cached_property
    def counts(self) -> Counts:
        both, lost, gained, neither = (sum(task[i] for task in self.per_task) for i in range(4))
        return both, lost, gained, neither

    @property
    def both(self) -> int:
        return self.counts[0]

    @property
    def lost(self) -> int:
        """Cases the control passed and the treatment failed."""
        return self.counts[1]

    @property
    def gained(self) -> int:
        """Cases the treatment passed and the control failed."""
        return self.counts[2]

    @property
    def neither(self) -> int:
        return self.counts[3]

    @property
    def cases(self) -> int:
        return sum(self.counts)

    @property
    def tasks(self) -> int:
        return len(self.per_task)

    @property
    def repeated(self) -> bool:
        """Some task has several cases: then the task is the unit of the interval and the test."""
        return any(sum(task) > 1 for task in self.per_task)

    @property
    def rates(self) -> tuple[float | None, float | None]:
        """The control's and the treatment's pass rates over the cases."""
        both, lost, gained, _ = self.counts
        n = self.cases
        return ((both + lost) / n, (both + gained) / n) if n else (None, None)

    @property
    def difference(self) -> float | None:
        """The treatment's pass rate minus the control's; None with no case."""
        return _difference(self.counts)

    @cached_property
    def interval(self) -> Interval | None:
        """The difference's 95% interval: Newcombe's, or when tasks repeat the task-cluster bootstrap's
        (None under its rule: ``why``)."""
        if not self.cases:
            return None
        if self.repeated:
            return cluster_bootstrap(list(self.per_task), [_difference])[0]
        return paired_difference(*self.counts)

    @property
    def why(self) -> str:
        """Why the difference has no interval; empty when it has one, or when there is no difference."""
        return "" if not self.cases or self.interval else no_interval(self.tasks)

    @property
    def test(self) -> str:
        """The name of ``p``'s test: ``MCNEMAR``, or ``SIGN_TEST`` when tasks repeat."""
        return SIGN_TEST if self.repeated else MCNEMAR

    @property
    def p(self) -> float | None:
        """The exact McNemar p of the gained against the lost cases; when tasks repeat, the sign test of each
        task's gained less lost cases (a task's cases are not independent pairs). None with no case."""
        if not self.cases:
            return None
        if self.repeated:
            return sign_test(gained - lost for _, lost, gained, _ in self.per_task)
        return mcnemar(self.gained, self.lost)

    @property
    def counted(self) -> str:
        """What the test counts: ``3 discordant``, or when tasks repeat ``2 of 5 tasks moved``."""
        if not self.repeated:
            return f"{self.lost + self.gained} discordant"
        moved = sum(gained != lost for _, lost, gained, _ in self.per_task)
        return f"{moved} of {self.tasks} tasks moved"


def fmt_difference(paired: PairedRates) -> str:
    """``+20.0 pts (95% CI -25.2 to 54.6)``, ``+20.0 pts (no interval: 3 tasks, fewer than 10)``, or ``-``."""
    if paired.difference is None:
        return "-"
    span = fmt_interval(paired.interval, "pts") if paired.interval else paired.why
    return f"{fmt_pts(paired.difference)} ({span})"


def fmt_test(paired: PairedRates) -> str:
    """``p = 0.25 (exact McNemar)``, ``p = 1.0 (sign test on tasks)``, or ``-`` with no case."""
    return f"{fmt_p(paired.p)} ({paired.test})" if paired.cases else "-"
