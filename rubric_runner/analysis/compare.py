"""Two sets of runs compared task by task: what regressed, what improved, and whether it is more than noise.

Each side's runs come as ``Case`` objects, grouped by configuration (``config``: the reports' group
key). Configurations are paired first (``pair_configs``): one each is one pair; else by their labels
when both sides name their configurations alike; else by position. Within a pair, a BASE run and a NEW
run are the same case when they have the same task, repeat and turn. A case passes on its final
answer's hidden checks when both runs were checked, else on the grader's verdict (``satisfied``).
Cases on one side only, and cases with an unfinished run, are listed, never counted in the figures.

The difference in pass rate (NEW minus BASE) has Newcombe's paired interval, and the discordant cases
the exact McNemar p (``analysis.intervals``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..records import Status
from .intervals import Interval, mcnemar, paired_difference, sign_test

CHECKS, VERDICT = "hidden checks", "verdict"
"""What a case was judged on: its final answers' hidden checks, or the grader's verdicts."""


@dataclass(frozen=True)
class Case:
    """One task x repeat of one side, as compare reads it."""

    config: str
    """Its configuration's key on its side (runs of one configuration share it)."""
    task: str
    repeat: int
    turn: int
    status: Status
    verified: bool | None
    """Whether its final answer passed its hidden checks; None when not checked."""
    tokens: int
    cost: float | None
    """Estimated USD; None when a model has no price."""

    @property
    def key(self) -> tuple[str, int, int]:
        """What makes a BASE and a NEW run the same case (within paired configurations)."""
        return self.task, self.repeat, self.turn

    @property
    def satisfied(self) -> bool:
        return self.status is Status.SATISFIED


@dataclass(frozen=True)
class Paired:
    """A case run on both sides."""

    base: Case
    new: Case

    @property
    def basis(self) -> str:
        """``CHECKS`` when both final answers were checked, else ``VERDICT``."""
        return CHECKS if self.base.verified is not None and self.new.verified is not None else VERDICT

    def passed(self, case: Case) -> bool:
        return bool(case.verified) if self.basis == CHECKS else case.satisfied

    @property
    def finished(self) -> bool:
        return not (self.base.status.unfinished or self.new.status.unfinished)

    @property
    def change(self) -> str:
        """``regressed``, ``improved``, ``passed`` (both) or ``failed`` (both)."""
        before, after = self.passed(self.base), self.passed(self.new)
        if before != after:
            return "improved" if after else "regressed"
        return "passed" if after else "failed"


@dataclass(frozen=True)
class Spend:
    """Tokens and estimated USD of a side's runs."""

    runs: int
    tokens: int
    cost: float | None

    @classmethod
    def of(cls, cases: Sequence[Case]) -> Spend:
        costs = [case.cost for case in cases]
        return cls(len(cases), sum(case.tokens for case in cases), None if None in costs else sum(costs))


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` found."""

    pairs: list[tuple[str, str]]
    """The configurations paired, (BASE key, NEW key) each."""
    rule: str
    """How they were paired: ``one configuration each``, ``by label`` or ``by position``."""
    cases: list[Paired]
    """Finished cases run on both sides."""
    unfinished: list[Paired]
    """Cases with a run still going, interrupted or stopped by a budget on either side."""
    only_base: list[Case]
    only_new: list[Case]
    base_spend: Spend
    new_spend: Spend
    """Of the finished cases run on both sides."""
    base_total: Spend
    new_total: Spend
    """Of every run of each side."""

    def by_change(self, change: str) -> list[Paired]:
        return [case for case in self.cases if case.change == change]

    @property
    def table(self) -> tuple[int, int, int, int]:
        """(passed both, regressed, improved, failed both)."""
        changes = [case.change for case in self.cases]
        return tuple(changes.count(name) for name in ("passed", "regressed", "improved", "failed"))

    @property
    def rates(self) -> tuple[float | None, float | None]:
        """The pass rates of BASE and NEW over the finished cases run on both sides."""
        both, lost, gained, _ = self.table
        n = len(self.cases)
        return ((both + lost) / n, (both + gained) / n) if n else (None, None)

    @property
    def difference(self) -> float | None:
        base, new = self.rates
        return None if base is None or new is None else new - base

    @property
    def interval(self) -> Interval | None:
        """Newcombe's 95% interval of NEW's pass rate minus BASE's."""
        return paired_difference(*self.table)

    @property
    def p(self) -> float | None:
        """The exact McNemar p of the regressed against the improved cases; when a task has several cases
        (repeats, turns), the sign test of each task's improved less regressed cases, since they are not
        independent pairs. None when there are no cases."""
        if not self.cases:
            return None
        moved: Counter[tuple[str, str]] = Counter()
        for case in self.cases:
            moved[case.base.config, case.base.task] += {"improved": 1, "regressed": -1}.get(case.change, 0)
        if len(moved) < len(self.cases):
            return sign_test(moved.values())
        _, lost, gained, _ = self.table
        return mcnemar(gained, lost)


def pair_configs(base: dict[str, str], new: dict[str, str]) -> tuple[list[tuple[str, str]], str]:
    """Pair the configurations of BASE and NEW (each: key -> label, in order of first run)."""
    if len(base) == 1 and len(new) == 1:
        return [(next(iter(base)), next(iter(new)))], "one configuration each"
    base_labels, new_labels = list(base.values()), list(new.values())
    if sorted(base_labels) == sorted(new_labels) and len(set(base_labels)) == len(base_labels):
        by_label = {label: key for key, label in new.items()}
        return [(key, by_label[label]) for key, label in base.items()], "by label"
    return list(zip(base, new)), "by position"


def compare(base: Sequence[Case], new: Sequence[Case], base_labels: dict[str, str], new_labels: dict[str, str]) -> Comparison:
    """Compare the cases of BASE and NEW, whose configurations are labelled by ``*_labels`` (key -> label,
    in order of first run)."""
    pairs, rule = pair_configs(base_labels, new_labels)
    new_config = dict(pairs)
    new_by_key = {(case.config, case.key): case for case in new}
    matched, only_base = [], []
    used: set[int] = set()
    for case in base:
        partner = new_by_key.get((new_config.get(case.config), case.key))
        if partner is None or id(partner) in used:
            only_base.append(case)
        else:
            used.add(id(partner))
            matched.append(Paired(case, partner))
    only_new = [case for case in new if id(case) not in used]
    finished = [pair for pair in matched if pair.finished]
    return Comparison(
        pairs=pairs, rule=rule, cases=finished, unfinished=[pair for pair in matched if not pair.finished],
        only_base=only_base, only_new=only_new,
        base_spend=Spend.of([pair.base for pair in finished]), new_spend=Spend.of([pair.new for pair in finished]),
        base_total=Spend.of(base), new_total=Spend.of(new),
    )


@dataclass(frozen=True)
class Gate:
    """When a comparison fails: more than ``count`` regressed cases, or, with ``alpha``, more regressed than
    improved cases with a McNemar p below ``alpha``; or no case paired at all, for then nothing was compared."""

    count: int = 0
    alpha: float | None = None

    def failed(self, comparison: Comparison) -> bool:
        if not comparison.cases:
            return True
        _, lost, gained, _ = comparison.table
        if self.alpha is not None:
            return lost > gained and comparison.p is not None and comparison.p < self.alpha
        return lost > self.count

    def describe(self) -> str:
        if self.alpha is not None:
            return f"more regressed than improved with McNemar p < {self.alpha:g}"
        return f"more than {self.count} regressed" if self.count else "any regression"
