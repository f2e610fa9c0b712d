"""Two sets of runs compared task by task: what regressed, what improved, and whether it is more than noise.

Each side's runs come as ``Case`` objects, grouped by configuration (``config``: the reports' group
key). Configurations are paired by fingerprint (``pair_configs``): the compared keys are those in which
the two sides differ as wholes (one value on all of BASE, another on all of NEW); a BASE configuration
and a NEW one are paired when they are alike in every other key. A configuration with no such partner
is not paired, with the keys in which it differs from its nearest one on the other side. Within a
pair, a BASE run and a NEW run are the same case when they have the same task, repeat and turn. A case
passes on its final answer's hidden checks when both runs were checked, else on the grader's verdict
(``satisfied``). Cases on one side only, cases with an unfinished run, and cases with a crashed run
(``error``, ``grader_error``: no verdict, ``Status.decided``) are listed and counted beside the figures,
never in them.

The difference in pass rate (NEW minus BASE), its interval and its test are the paired engine's
(``paired.PairedRates``, a task being a BASE configuration's task): when a task has several cases (repeats,
turns), its cases are not independent pairs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..records import Status
from .paired import PairedRates

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
class CasePair:
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
    def decided(self) -> bool:
        """Both runs ended with a verdict (``Status.decided``): neither crashed."""
        return self.base.status.decided and self.new.status.decided

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
        costs = [case.cost for case in cases if case.cost is not None]
        return cls(len(cases), sum(case.tokens for case in cases), sum(costs) if len(costs) == len(cases) else None)


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` found."""

    pairing: Pairing
    """Which configurations were paired, and which not."""
    cases: list[CasePair]
    """Cases run on both sides and decided on both (the figures' cases)."""
    unfinished: list[CasePair]
    """Cases with a run still going, interrupted or stopped by a budget on either side."""
    crashed: list[CasePair]
    """Finished cases with a crashed run (``error``, ``grader_error``) on either side."""
    only_base: list[Case]
    only_new: list[Case]
    base_spend: Spend
    new_spend: Spend
    """Of the compared cases (``cases``)."""
    base_total: Spend
    new_total: Spend
    """Of every run of each side."""

    @property
    def paired_share(self) -> float:
        """The share of every case of either side that was compared: run on both sides and decided on both
        (a case on one side only, or with an unfinished or crashed run, is not); 0 for no case."""
        return len(self.cases) / self.total if self.total else 0.0

    @property
    def total(self) -> int:
        """Every case of either side, a case run on both counted once."""
        return len(self.cases) + len(self.unfinished) + len(self.crashed) + len(self.only_base) + len(self.only_new)

    def by_change(self, change: str) -> list[CasePair]:
        return [case for case in self.cases if case.change == change]

    @cached_property
    def paired(self) -> PairedRates:
        """BASE (the control) against NEW over the compared cases, a task being a BASE configuration's task."""
        return PairedRates.of(((pair.base.config, pair.base.task), pair.passed(pair.base), pair.passed(pair.new))
                              for pair in self.cases)


Part = dict[str, Any]
"""A configuration as compare reads it: its flattened keys (``report.configs.configuration``), kind and turn."""


@dataclass(frozen=True)
class Unpaired:
    """A configuration of one side with no partner on the other: the keys in which it differs from the
    nearest configuration there (beside the compared keys), or none when the other side has none left."""

    side: str
    config: str
    nearest: str | None
    differs: tuple[tuple[str, str, str], ...]
    """(key, its value here, its value in ``nearest``) each."""

    @property
    def differences(self) -> str:
        """``grader.max_iterations 1 vs 2, worker.model b vs a``."""
        return ", ".join(f"{key} {mine} vs {theirs}" for key, mine, theirs in self.differs)


@dataclass(frozen=True)
class Pairing:
    """Which configurations of BASE and NEW were paired, on which compared keys, and which were not."""

    pairs: list[tuple[str, str]]
    compared: tuple[str, ...]
    unpaired: list[Unpaired]

    @property
    def clause(self) -> str:
        """The compared keys, as a clause: ``alike in every key but `grader.script```."""
        keys = ", ".join(f"`{key}`" for key in self.compared)
        return f"alike in every key but {keys}" if keys else "alike in every key"


def _value(part: Part, key: str) -> str:
    return json.dumps(part.get(key), sort_keys=True, default=str)


def _differing(a: Part, b: Part, left_out: Iterable[str] = ()) -> tuple[tuple[str, str, str], ...]:
    keys = sorted(k for k in a.keys() | b.keys() if k not in left_out and _value(a, k) != _value(b, k))
    return tuple((k, _text(a.get(k)), _text(b.get(k))) for k in keys)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def compared_keys(base: dict[str, Part], new: dict[str, Part]) -> tuple[str, ...]:
    """The keys in which the two sides differ as wholes: one value on every BASE configuration, another
    on every NEW one (what the comparison is about: the prompt, the model, the grader script)."""
    keys = {k for part in (*base.values(), *new.values()) for k in part}
    found = []
    for key in sorted(keys):
        before, after = {_value(p, key) for p in base.values()}, {_value(p, key) for p in new.values()}
        if len(before) == len(after) == 1 and before != after:
            found.append(key)
    return tuple(found)


def pair_configs(base: dict[str, Part], new: dict[str, Part]) -> Pairing:
    """Pair the configurations of BASE and NEW (each: key -> part, in order of first run) by fingerprint:
    alike in every key but the compared ones."""
    compared = compared_keys(base, new)

    def rest(part: Part) -> str:
        return json.dumps({k: v for k, v in part.items() if k not in compared}, sort_keys=True, default=str)

    by_rest = {rest(part): key for key, part in new.items()}
    pairs = [(key, by_rest[rest(part)]) for key, part in base.items() if rest(part) in by_rest]
    paired_base, paired_new = {b for b, _ in pairs}, {n for _, n in pairs}
    left = {"BASE": {k: p for k, p in base.items() if k not in paired_base},
            "NEW": {k: p for k, p in new.items() if k not in paired_new}}
    unpaired = []
    for side, other in (("BASE", "NEW"), ("NEW", "BASE")):
        for key, part in left[side].items():
            differences = {o: _differing(part, p, compared) for o, p in left[other].items()}
            nearest = min(differences, key=lambda o: len(differences[o]), default=None)
            unpaired.append(Unpaired(side, key, nearest, differences[nearest] if nearest is not None else ()))
    return Pairing(pairs, compared, unpaired)


def compare(base: Sequence[Case], new: Sequence[Case], base_parts: dict[str, Part], new_parts: dict[str, Part]) -> Comparison:
    """Compare the cases of BASE and NEW, whose configurations are ``*_parts`` (key -> part, in order of
    first run)."""
    pairing = pair_configs(base_parts, new_parts)
    new_config = dict(pairing.pairs)
    new_by_key = {(case.config, case.key): case for case in new}
    matched, only_base = [], []
    used: set[int] = set()
    for case in base:
        config = new_config.get(case.config)
        partner = new_by_key.get((config, case.key)) if config is not None else None
        if partner is None or id(partner) in used:
            only_base.append(case)
        else:
            used.add(id(partner))
            matched.append(CasePair(case, partner))
    only_new = [case for case in new if id(case) not in used]
    compared = [pair for pair in matched if pair.finished and pair.decided]
    return Comparison(
        pairing=pairing, cases=compared, unfinished=[pair for pair in matched if not pair.finished],
        crashed=[pair for pair in matched if pair.finished and not pair.decided],
        only_base=only_base, only_new=only_new,
        base_spend=Spend.of([pair.base for pair in compared]), new_spend=Spend.of([pair.new for pair in compared]),
        base_total=Spend.of(base), new_total=Spend.of(new),
    )


MIN_PAIRED = 0.8
"""The gate's default least share of cases compared (``Comparison.paired_share``)."""


@dataclass(frozen=True)
class Gate:
    """When a comparison fails: more than ``count`` regressed cases, or, with ``alpha``, more regressed than
    improved cases with a p (``PairedRates.p``) below ``alpha``; or fewer than ``min_paired`` of the cases compared
    (none at all among them), for then what was compared does not speak for the runs."""

    count: int = 0
    alpha: float | None = None
    min_paired: float = MIN_PAIRED

    def too_few(self, comparison: Comparison) -> bool:
        """Whether too few cases were compared: none, or a share below ``min_paired``."""
        return not comparison.cases or comparison.paired_share < self.min_paired

    def failed(self, comparison: Comparison) -> bool:
        if self.too_few(comparison):
            return True
        paired = comparison.paired
        if self.alpha is not None:
            return paired.lost > paired.gained and paired.p is not None and paired.p < self.alpha
        return paired.lost > self.count

    def describe(self) -> str:
        if self.alpha is not None:
            rule = f"more regressed than improved with p < {self.alpha:g}"
        else:
            rule = f"more than {self.count} regressed" if self.count else "any regression"
        return f"{rule}, or fewer than {self.min_paired:.0%} of the cases compared"
