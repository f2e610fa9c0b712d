"""Does the loop help? The rubric loop against its controls at equal budget (``loop.arm``), from runs.

Each run is an ``Attempts``: the outcome of each of its attempts and of its final answer, on the hidden
checks, or, where no run has any, on the grader's verdicts (``satisfied``). From them:

- per arm (a configuration): the final pass rate, and tokens and USD per success;
- the rubric loop against each control of the same configuration but its arm, paired on task and
  repeat (``paired.PairedRates``: the difference of the two pass rates, its interval and its test);
- the curve: the pass rate of the answer standing after pass 1, 2, ..., n (a run that ended sooner keeps
  its final answer), and what each extra pass cost and gained;
- the revisions that broke an answer that passed its checks, and the criteria that passed, then failed;
- the revisions the grader caused: a pass whose verdict the library marked ``unverified`` sent the worker
  back for the grader's own under-reporting, not for a fault of the answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from .paired import PairedRates

RUBRIC = "rubric"
"""The arm the controls are measured against."""
CHECKS, VERDICTS = "hidden checks", "grader's verdicts"
"""What a pass means: the hidden checks passed, or (no checks) the grader said ``satisfied``."""


@dataclass(frozen=True)
class Attempts:
    """What the loop's value reads of one run."""

    index: int
    """The run's number in its report."""
    group: str
    """Its configuration."""
    arm: str
    """``loop.arm``: rubric, resample or single."""
    pairing: str
    """Its configuration but the arm: runs of arms to compare share it."""
    task: Hashable
    repeat: int | None
    checked: tuple[bool | None, ...]
    """Each attempt's hidden checks: passed, failed, or None (not checked, or unverifiable)."""
    satisfied: tuple[bool | None, ...]
    """Each grading pass: whether its verdict was ``satisfied``; None for a ``grader_error``, no verdict."""
    final_checked: bool | None
    """The final answer's hidden checks; None when not checked or unverifiable."""
    final_satisfied: bool | None
    """Whether the run ended ``satisfied``; None when it was not decided (a crash, unfinished)."""
    tokens: int
    cost: float | None
    spent: tuple[tuple[int, float | None], ...] = ()
    """After each pass: the run's tokens and USD so far (empty when the record does not say)."""
    criteria: tuple[tuple[tuple[str, bool], ...], ...] = ()
    """Each grading pass's criteria: (name, passed) each."""
    unverified: tuple[bool, ...] = ()
    """Each grading pass: whether the library marked its verdict unverified (the grader under-reported)."""
    verdicts: tuple[str, ...] = ()
    """Each grading pass's result (``satisfied``, ``needs_revision``, ``max_iterations_reached``, ...)."""
    cap: int = 0
    """The grading passes its configuration allowed (``grader.max_iterations``); 0 when the record does not say."""
    returns: str = "last"
    """Its ``loop.returns``: the attempt its loop answered with."""
    stop: str = "none"
    """Its ``loop.stop``: the rule that could end its loop before the cap."""
    siblings: str = ""
    """Its configuration but ``loop.returns`` and ``loop.stop``: runs of one loop under other policies share it."""

    @property
    def grader_revisions(self) -> int:
        """Revisions the grader caused: passes before the last that sent the worker back on an unverified verdict."""
        return sum(self.unverified[:-1])


def basis(runs: Iterable[Attempts]) -> str:
    """``CHECKS`` when some run's final answer was checked, else ``VERDICTS``."""
    return CHECKS if any(run.final_checked is not None for run in runs) else VERDICTS


def outcomes(run: Attempts, on: str) -> tuple[bool | None, ...]:
    """Each attempt's outcome on ``on``."""
    return run.checked if on == CHECKS else run.satisfied


def final(run: Attempts, on: str) -> bool | None:
    """The final answer's outcome on ``on``."""
    return run.final_checked if on == CHECKS else run.final_satisfied


def standing(run: Attempts, on: str, k: int) -> bool | None:
    """The outcome of the answer standing after pass ``k``: the k-th attempt's, or a run that ended sooner
    its final answer's; None when not known."""
    seen = outcomes(run, on)
    if not seen:
        return None
    return final(run, on) if k >= len(seen) else seen[k - 1]


@dataclass(frozen=True)
class Arm:
    """One configuration's figures: its final answers passed, and the spend per pass."""

    group: str
    arm: str
    runs: int
    passed: int
    decided: int
    """Runs whose final outcome is known."""
    tokens: int
    cost: float | None
    grader_revisions: int = 0
    """Revisions the grader caused (``Attempts.grader_revisions``), over the runs."""

    @property
    def tokens_per_success(self) -> float | None:
        return self.tokens / self.passed if self.passed else None

    @property
    def cost_per_success(self) -> float | None:
        return self.cost / self.passed if self.passed and self.cost is not None else None


def by_group(runs: Iterable[Attempts]) -> dict[str, list[Attempts]]:
    """The runs of each configuration (``Attempts.group``), the configurations in the order their first run came."""
    groups: dict[str, list[Attempts]] = defaultdict(list)
    for run in runs:
        groups[run.group].append(run)
    return groups


def arms(runs: list[Attempts], on: str) -> list[Arm]:
    """Per configuration, in the runs' order: its final pass rate and its spend."""
    found = []
    for group, members in by_group(runs).items():
        known = [value for value in (final(run, on) for run in members) if value is not None]
        costs = [run.cost for run in members if run.cost is not None]
        found.append(Arm(group, members[0].arm, len(members), sum(known), len(known), sum(run.tokens for run in members),
                         sum(costs) if len(costs) == len(members) else None,
                         sum(run.grader_revisions for run in members)))
    return found


@dataclass(frozen=True)
class Point:
    """The pass rate after pass ``k`` of one configuration, and what that pass added."""

    k: int
    passed: int
    known: int
    took: int
    """Runs that took pass k."""
    gained: int | None = None
    """Net answers passing after pass k, against after pass k - 1 (fixed less broken; from k = 2)."""
    tokens: int | None = None
    """Tokens the runs spent on pass k (from k = 2; None when a record does not say)."""
    cost: float | None = None

    @property
    def rate(self) -> float | None:
        return self.passed / self.known if self.known else None

    @property
    def tokens_per_gain(self) -> float | None:
        return self.tokens / self.gained if self.tokens is not None and self.gained else None


def curve(runs: list[Attempts], on: str) -> dict[str, list[Point]]:
    """Per configuration, for each pass k up to the most any of its runs took: the pass rate of the answers
    standing after pass k, and from k = 2 the net gain and the spend of pass k."""
    found = {}
    for group, members in by_group(runs).items():
        most = max((len(outcomes(run, on)) for run in members), default=0)
        points = []
        for k in range(1, most + 1):
            now = [standing(run, on, k) for run in members]
            known = [value for value in now if value is not None]
            took = [run for run in members if len(outcomes(run, on)) >= k]
            point = Point(k, sum(known), len(known), len(took))
            if k > 1:
                pairs = [(standing(run, on, k - 1), value) for run, value in zip(members, now)]
                gained = sum(int(after) - int(before) for before, after in pairs if before is not None and after is not None)
                spends = [spend for spend in (_pass_spend(run, k) for run in took) if spend is not None]
                tokens = sum(s[0] for s in spends) if len(spends) == len(took) else None
                costs = [s[1] for s in spends if s[1] is not None]
                cost = sum(costs) if tokens is not None and len(costs) == len(spends) else None
                point = Point(k, point.passed, point.known, point.took, gained, tokens, cost)
            points.append(point)
        found[group] = points
    return found


def _pass_spend(run: Attempts, k: int) -> tuple[int, float | None] | None:
    """What pass ``k`` of ``run`` (from 2) cost: its tokens and USD since pass k - 1 ended."""
    if len(run.spent) < k:
        return None
    (before, before_cost), (after, after_cost) = run.spent[k - 2], run.spent[k - 1]
    cost = None if before_cost is None or after_cost is None else after_cost - before_cost
    return after - before, cost


@dataclass(frozen=True)
class Comparison:
    """The rubric loop (the treatment) against one control, paired on task and repeat."""

    rubric: str
    control: str
    paired: PairedRates


def compare(rubric: list[Attempts], control: list[Attempts], on: str) -> Comparison:
    """``rubric``'s runs against ``control``'s, paired on task and repeat; a pair counts when both
    outcomes are known."""
    theirs = {(run.task, run.repeat): final(run, on) for run in control}
    return Comparison(rubric[0].group, control[0].group,
                      PairedRates.of((run.task, theirs.get((run.task, run.repeat)), final(run, on)) for run in rubric))


def comparisons(runs: list[Attempts], on: str) -> list[Comparison]:
    """The rubric loop against each control of the same configuration but its arm."""
    found = []
    groups = by_group(runs)
    for group, members in groups.items():
        if members[0].arm != RUBRIC:
            continue
        for other, controls in groups.items():
            if other != group and controls[0].arm != RUBRIC and controls[0].pairing == members[0].pairing:
                found.append(compare(members, controls, on))
    return found


@dataclass(frozen=True)
class Broken:
    """A revision that broke an answer that passed its hidden checks: the run, and the pass that judged
    the broken attempt."""

    run: Attempts
    at: int


def broken(runs: list[Attempts]) -> list[Broken]:
    """Each run whose attempt failed its checks right after one that passed (the first such attempt)."""
    found = []
    for run in runs:
        checked = [(k, value) for k, value in enumerate(run.checked, start=1) if value is not None]
        at = next((k for (_, before), (k, after) in zip(checked, checked[1:]) if before and not after), None)
        if at is not None:
            found.append(Broken(run, at))
    return found


@dataclass(frozen=True)
class Flip:
    """A criterion that passed at one grading pass of a run and failed at a later one."""

    run: Attempts
    criterion: str
    passed_at: int
    failed_at: int


def flipped(runs: list[Attempts]) -> list[Flip]:
    """Each criterion of each run that failed at a pass after one where it passed (the first such pair)."""
    found = []
    for run in runs:
        passed: dict[str, int] = {}
        failed: set[str] = set()
        for k, criteria in enumerate(run.criteria, start=1):
            for name, ok in criteria:
                if ok:
                    passed.setdefault(name, k)
                elif name in passed and name not in failed:
                    failed.add(name)
                    found.append(Flip(run, name, passed[name], k))
    return found
