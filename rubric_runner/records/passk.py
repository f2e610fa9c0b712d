"""pass@k and pass^k over tasks run several times, with the unbiased estimator (Chen et al., 2021).

A task run ``n`` times that succeeded ``c`` times would, among ``k`` of its runs drawn without
replacement, succeed at least once with probability ``1 - C(n-c, k) / C(n, k)`` (pass@k) and every time
with ``C(c, k) / C(n, k)`` (pass^k); a set's figure is the mean over its tasks. It is reported for k = 1
and for k = the fewest runs any task had, so every task has its k runs: with 2 to 4 runs per task, k
is 2. Success is whatever the caller counts: the hidden checks passed (pass@k) or the grader said
``satisfied`` (satisfied@k, over the decided runs: ``satisfied_k``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from math import comb

from .status import Status


def pass_at(n: int, c: int, k: int) -> float:
    """The chance that ``k`` of ``n`` runs with ``c`` successes hold at least one."""
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_all(n: int, c: int, k: int) -> float:
    """The chance that ``k`` of ``n`` runs with ``c`` successes are all successes."""
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True)
class PassK:
    """A set of tasks' figures at k = 1 and at ``k``, each a mean over its ``tasks``."""

    tasks: int
    k: int
    at_1: float
    at_k: float
    all_k: float
    """pass^k: every one of k runs a success."""


def pass_k(outcomes: Iterable[tuple[int, int]]) -> PassK | None:
    """The figures of tasks given as (runs, successes) each; tasks without a run are left out, and None
    when none is left."""
    tasks = [(n, c) for n, c in outcomes if n]
    if not tasks:
        return None
    k = min(n for n, _ in tasks)

    def mean(values: Iterable[float]) -> float:
        return sum(values) / len(tasks)

    return PassK(
        tasks=len(tasks), k=k, at_1=mean(c / n for n, c in tasks), at_k=mean(pass_at(n, c, k) for n, c in tasks),
        all_k=mean(pass_all(n, c, k) for n, c in tasks),
    )


def satisfied_k(runs: Iterable[tuple[Hashable, Status]]) -> PassK | None:
    """satisfied@1, satisfied@k and satisfied^k of runs given as (task, status): over each task's decided
    runs (``Status.decided``: a crash or an unfinished run is in none), k the fewest a task has; None when
    no run was decided. Every satisfied@k the records and the reports give is this one."""
    by_task: dict[Hashable, list[int]] = {}
    for task, status in runs:
        counts = by_task.setdefault(task, [0, 0])
        if status.decided:
            counts[0] += 1
            counts[1] += status is Status.SATISFIED
    return pass_k((n, c) for n, c in by_task.values())
