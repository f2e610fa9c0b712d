"""How far graders agree: with themselves over repeat gradings, with each other, and with people.

Pure arithmetic on ratings, no records read. Each item (a transcript) has a list of ratings (verdicts, or
a criterion's pass or fail); the figures are percent agreement, Fleiss' κ (any number of ratings an
item), Cohen's κ (two raters, two categories), Krippendorff's α (nominal; the ``krippendorff`` package)
and the majority vote. Every interval is a seeded percentile bootstrap that resamples whole items
(``intervals.cluster_bootstrap``), so the same ratings always give the same interval; under the
bootstrap's rule (at least ``intervals.MIN_TASKS`` items, not all alike), else none, its reason said.
Ratings without a value (a grading that ended without a verdict) are in no figure, and counted.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ..records import CheckOutcome, Status
from .intervals import MIN_TASKS, RESAMPLES, SEED, Interval, cluster_bootstrap, no_interval, percentiles
from .judge import Judged, Judgement, judge_all
from .numbers import fmt_interval, fmt_num, fmt_pct

UNSTABLE_KAPPA = 0.6
"""A grader whose κ with itself on a criterion is below this is unstable on it (Landis and Koch's
"substantial" starts at 0.61)."""


@dataclass(frozen=True)
class Coefficient:
    """A κ or α with its 95% interval, or why it has none; ``value`` None when undefined (every rating
    the same category, or no item rated twice)."""

    value: float | None
    interval: Interval | None = None
    why: str = ""

    def __str__(self) -> str:
        """``0.62 (95% CI 0.31 to 0.88)``, ``0.62 (no interval: 5 transcripts, fewer than 10)``; ``n/a`` when undefined."""
        if self.value is None:
            return "n/a"
        span = fmt_interval(self.interval, "") if self.interval else self.why
        return fmt_num(self.value) + (f" ({span})" if span else "")


@dataclass(frozen=True)
class Share:
    """A proportion (percent agreement) with its 95% interval, or why it has none."""

    value: float | None
    interval: Interval | None = None
    why: str = ""

    def __str__(self) -> str:
        """``86.7% (95% CI 66.7-100.0%)``; ``n/a`` when there is nothing to count."""
        if self.value is None:
            return "n/a"
        span = fmt_interval(self.interval) if self.interval else self.why
        return fmt_pct(self.value) + (f" ({span})" if span else "")


def _why(interval: Interval | None, items: int) -> str:
    """Why a figure over ``items`` transcripts has no interval; empty when it has one."""
    return "" if interval else no_interval(items, "transcript")


@dataclass(frozen=True)
class Agreement:
    """How the ratings of ``items`` agree: ``percent`` (the mean share of agreeing pairs of ratings of an
    item) and ``kappa`` (Fleiss'), over the items with two ratings or more."""

    items: int
    ratings: int
    percent: Share
    kappa: Coefficient
    split: int = 0
    """Items whose ratings were not all the same."""

    @property
    def changed(self) -> str:
        """``3 of 5``: the items whose ratings were not all the same; ``n/a`` when no item was rated twice."""
        return f"{self.split} of {self.items}" if self.items else "n/a"


def _fleiss_vector(ratings: Sequence[Hashable], categories: Sequence[Hashable]) -> tuple[float, ...]:
    """One item's part of Fleiss' sums: (1, P_i, n_i, n_i1 ... n_ic)."""
    n = len(ratings)
    counts = Counter(ratings)
    p_i = sum(c * (c - 1) for c in counts.values()) / (n * (n - 1))
    return (1, p_i, n, *(counts.get(category, 0) for category in categories))


def _fleiss_kappa(summed: Sequence[float]) -> float | None:
    items, p_bar, total = summed[0], summed[1] / summed[0], summed[2]
    p_e = sum((n_j / total) ** 2 for n_j in summed[3:])
    return None if p_e >= 1 - 1e-12 else (p_bar - p_e) / (1 - p_e) if items else None


def fleiss(items: Iterable[Sequence[Hashable]], resamples: int = RESAMPLES, seed: int = SEED) -> Agreement:
    """Percent agreement and Fleiss' κ of ``items`` (each a list of ratings; those with fewer than two left
    out): P_i = Σ_j n_ij(n_ij - 1) / (n_i(n_i - 1)), P̄ the mean P_i, p_j = Σ_i n_ij / Σ_i n_i,
    P_e = Σ_j p_j², κ = (P̄ - P_e) / (1 - P_e)."""
    rated = [list(ratings) for ratings in items if len(ratings) >= 2]
    if not rated:
        return Agreement(0, 0, Share(None), Coefficient(None))
    categories = sorted({r for ratings in rated for r in ratings}, key=repr)
    vectors = [_fleiss_vector(ratings, categories) for ratings in rated]
    summed = [sum(column) for column in zip(*vectors)]
    percent_of = lambda s: s[1] / s[0]  # noqa: E731
    found = cluster_bootstrap(vectors, [percent_of, _fleiss_kappa], resamples, seed)
    kappa = _fleiss_kappa(summed)
    return Agreement(len(rated), int(summed[2]), Share(percent_of(summed), found[0], _why(found[0], len(rated))),
                     Coefficient(kappa, found[1], _why(found[1], len(rated))) if kappa is not None else Coefficient(None),
                     split=sum(len(set(ratings)) > 1 for ratings in rated))


def _cohen_kappa(summed: Sequence[float]) -> float | None:
    n, agree, a_yes, b_yes = summed
    if not n:
        return None
    p_a, p_b = a_yes / n, b_yes / n
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)
    return None if p_e >= 1 - 1e-12 else (agree / n - p_e) / (1 - p_e)


@dataclass(frozen=True)
class TwoRaters:
    """Two raters on the same items (a grader against a person): agreement and Cohen's κ."""

    items: int
    percent: Share
    kappa: Coefficient
    agreed: int


def cohen(pairs: Iterable[tuple[bool, bool]], resamples: int = RESAMPLES, seed: int = SEED) -> TwoRaters:
    """Percent agreement and Cohen's κ of two raters' yes/no ratings: p_o the share of items they agree
    on, p_e = p_a·p_b + (1 - p_a)(1 - p_b) from each rater's share of yes, κ = (p_o - p_e) / (1 - p_e)."""
    vectors = [(1, int(a == b), int(a), int(b)) for a, b in pairs]
    if not vectors:
        return TwoRaters(0, Share(None), Coefficient(None), 0)
    summed = [sum(column) for column in zip(*vectors)]
    percent_of = lambda s: s[1] / s[0]  # noqa: E731
    found = cluster_bootstrap(vectors, [percent_of, _cohen_kappa], resamples, seed)
    kappa = _cohen_kappa(summed)
    return TwoRaters(len(vectors), Share(percent_of(summed), found[0], _why(found[0], len(vectors))),
                     Coefficient(kappa, found[1], _why(found[1], len(vectors))) if kappa is not None else Coefficient(None),
                     int(summed[1]))


def _alpha(data: list[list[float]]) -> float | None:
    try:
        import krippendorff
        import numpy
    except ImportError:
        from ..errors import UsageError

        raise UsageError("krippendorff", "Krippendorff's alpha needs the krippendorff package",
                         "pip install 'rubric_runner[review]'") from None
    values = {v for row in data for v in row if v == v}
    if len(values) < 2:
        return None
    value = float(krippendorff.alpha(reliability_data=numpy.array(data, dtype=float), level_of_measurement="nominal"))
    return None if value != value else value


def krippendorff_alpha(units: Sequence[Sequence[bool | None]], resamples: int = 1000, seed: int = SEED) -> Coefficient:
    """Krippendorff's α (nominal) of raters on units: ``units[u][r]`` rater r's rating of unit u, None where
    it gave none; α = 1 - D_o / D_e (observed over expected disagreement, pairable values only). Its
    interval resamples units (seeded)."""
    usable = [unit for unit in units if sum(v is not None for v in unit) >= 2]
    as_rows = lambda chosen: [[float("nan") if unit[r] is None else float(unit[r]) for unit in chosen]  # noqa: E731
                              for r in range(len(chosen[0]))]
    if not usable:
        return Coefficient(None)
    value = _alpha(as_rows(usable))
    if value is None or len(usable) < MIN_TASKS:
        return Coefficient(value, None, _why(None, len(usable)) if value is not None else "")
    rng, found = random.Random(seed), []
    for _ in range(resamples):
        drawn = _alpha(as_rows([usable[rng.randrange(len(usable))] for _ in usable]))
        if drawn is not None:
            found.append(drawn)
    interval = percentiles(found)
    return Coefficient(value, interval, _why(interval, len(usable)))


H = TypeVar("H", bound=Hashable)


def majority(values: Iterable[H | None]) -> H | None:
    """The value given most often (None left out); None on a tie or when none was given."""
    counts = Counter(v for v in values if v is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


@dataclass(frozen=True)
class Rating:
    """One grading pass of one transcript: who graded it, its verdict (satisfied or not; None when the pass
    ended without one), each criterion's pass or fail, and the answer's truths (hidden checks, a person)."""

    grader: str
    item: str
    """The transcript graded (its record dir)."""
    verdict: bool | None
    criteria: tuple[tuple[str, bool], ...] = ()
    checked: bool | None = None
    """Whether the final answer passed its hidden checks; None when not checked."""
    task: Hashable = None
    status: Status | None = None
    """How the pass ended, when it gave no verdict (``grader_error``, ...)."""
    first_checked: bool | None = None
    """Whether the run's first answer passed its hidden checks (the reports' lift counts it)."""


def _by_item(ratings: Iterable[Rating], value: Callable[[Rating], bool | None]) -> dict[str, list[bool]]:
    found: dict[str, list[bool]] = {}
    for rating in ratings:
        v = value(rating)
        if v is not None:
            found.setdefault(rating.item, []).append(v)
    return found


def _criterion(name: str) -> Callable[[Rating], bool | None]:
    return lambda r: dict(r.criteria).get(name)


def criteria_of(ratings: Iterable[Rating]) -> list[str]:
    """Every criterion graded, in the order first met."""
    return list(dict.fromkeys(name for r in ratings for name, _ in r.criteria))


@dataclass(frozen=True)
class SelfAgreement:
    """One grader's agreement with itself over repeat gradings of the same transcripts."""

    verdict: Agreement
    criteria: dict[str, Agreement]
    unstable: list[str]
    """Criteria whose κ is below ``UNSTABLE_KAPPA``."""
    without_verdict: dict[str, int] = field(default_factory=dict)
    """Gradings that ended without a verdict (``grader_error``, ...), by status: in no figure."""

    def stable(self, name: str) -> str:
        """``yes``, ``no`` (κ below ``UNSTABLE_KAPPA``), or ``n/a`` when no transcript has two ratings of it."""
        return "n/a" if not self.criteria[name].items else "no" if name in self.unstable else "yes"

    @property
    def unstable_text(self) -> str:
        """The unstable criteria, ``none``, or ``n/a`` when no criterion was rated twice on a transcript."""
        return "; ".join(self.unstable) or ("none" if any(a.items for a in self.criteria.values()) else "n/a")

    @property
    def dropped(self) -> str:
        """``2 (grader_error 2)``: the gradings without a verdict, by status; ``0`` when none."""
        total = sum(self.without_verdict.values())
        return f"{total} ({', '.join(f'{status} {n}' for status, n in self.without_verdict.items())})" if total else "0"


def self_agreement(ratings: Sequence[Rating]) -> SelfAgreement:
    """A grader's self-agreement on verdicts and on each criterion (``ratings`` all its own), and the
    gradings it left out for want of a verdict."""
    criteria = {name: fleiss(_by_item(ratings, _criterion(name)).values()) for name in criteria_of(ratings)}
    unstable = [name for name, a in criteria.items() if a.kappa.value is not None and a.kappa.value < UNSTABLE_KAPPA]
    without = Counter((r.status.value if r.status else "no verdict") for r in ratings if r.verdict is None)
    return SelfAgreement(fleiss(_by_item(ratings, lambda r: r.verdict).values()), criteria, unstable,
                         dict(without.most_common()))


def graders_of(ratings: Iterable[Rating]) -> dict[str, list[Rating]]:
    """The ratings by grader, in the order first met."""
    found: dict[str, list[Rating]] = {}
    for rating in ratings:
        found.setdefault(rating.grader, []).append(rating)
    return found


def consensus(ratings: Sequence[Rating], value: Callable[[Rating], bool | None] = lambda r: r.verdict) -> dict[str, bool | None]:
    """Each transcript's majority ``value`` over the ratings (a grader's repeats, or a panel's graders)."""
    return {item: majority(values) for item, values in _by_item(ratings, value).items()}


@dataclass(frozen=True)
class Panel:
    """Several graders on the same transcripts: how they agree, and their majority vote as one grader."""

    graders: list[str]
    verdict: Agreement
    """Fleiss' κ over each grader's majority verdict on each transcript."""
    alpha: Coefficient
    """Krippendorff's α of the same."""
    criteria: dict[str, Agreement]
    votes: list[Rating]
    """The panel's ratings: each transcript's majority of the graders' majorities (none on a tie)."""


PANEL = "panel (majority vote)"


def panel(ratings: Sequence[Rating]) -> Panel | None:
    """The panel of the graders in ``ratings``; None with fewer than two graders."""
    graders = graders_of(ratings)
    if len(graders) < 2:
        return None
    own = {g: consensus(rs) for g, rs in graders.items()}
    names = criteria_of(ratings)
    own_criteria = {g: {n: consensus(rs, _criterion(n)) for n in names} for g, rs in graders.items()}
    items = list(dict.fromkeys(r.item for r in ratings))
    first = {r.item: r for r in ratings}
    units = [[own[g].get(item) for g in graders] for item in items]
    votes = []
    for item in items:
        verdict = majority(own[g].get(item) for g in graders)
        crits = tuple((n, v) for n in names if (v := majority(own_criteria[g][n].get(item) for g in graders)) is not None)
        votes.append(Rating(PANEL, item, verdict, crits, first[item].checked, first[item].task,
                            first_checked=first[item].first_checked))
    return Panel(
        graders=list(graders), verdict=fleiss([[v for v in unit if v is not None] for unit in units]),
        alpha=krippendorff_alpha(units),
        criteria={n: fleiss([[own_criteria[g][n].get(item) for g in graders if own_criteria[g][n].get(item) is not None]
                             for item in items]) for n in names},
        votes=votes,
    )


def against_checks(ratings: Sequence[Rating]) -> Judgement | None:
    """The grader's ratings against the final answers' hidden checks, as ``judge`` figures them (false
    satisfied, false rejection, ...; repeats of a transcript resample together)."""
    return judge_all([_judged(r, r.checked, r.first_checked) for r in ratings])


def _judged(rating: Rating, truth: bool | None, first: bool | None = None) -> Judged:
    status = Status.SATISFIED if rating.verdict else Status.FAILED
    if rating.verdict is None:
        status = rating.status or Status.GRADER_ERROR
    outcome = None if truth is None else CheckOutcome.PASSED if truth else CheckOutcome.FAILED
    return Judged(status=status, verified_first=first, verified_final=truth, verified_outcome=outcome,
                  tokens=None, cost=None, task=rating.task if rating.task is not None else rating.item,
                  transcript=rating.item)


@dataclass(frozen=True)
class Label:
    """A person's label of a transcript's final answer: satisfied or not, and each criterion's pass or fail."""

    satisfied: bool | None
    criteria: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class AgainstPeople:
    """A grader against people's labels: its matrix figures with the labels as truth, agreement and Cohen's
    κ on the verdict and on each criterion labelled."""

    judgement: Judgement | None
    verdict: TwoRaters
    criteria: dict[str, TwoRaters]


def against_labels(ratings: Sequence[Rating], labels: dict[str, Label]) -> AgainstPeople:
    """``ratings`` of one grader against the ``labels`` of the same transcripts (by item); each repeat is
    one pair."""
    truths = {item: label.satisfied for item, label in labels.items() if label.satisfied is not None}
    labelled = [r for r in ratings if r.item in truths]
    judgement = judge_all([_judged(r, truths[r.item]) for r in labelled]) if labelled else None
    verdict = cohen((r.verdict, truths[r.item]) for r in labelled if r.verdict is not None)
    names = criteria_of(ratings)
    criteria = {}
    for name in names:
        pairs = [(dict(r.criteria)[name], labels[r.item].criteria[name]) for r in ratings
                 if r.item in labels and name in labels[r.item].criteria and name in dict(r.criteria)]
        if pairs:
            criteria[name] = cohen(pairs)
    return AgainstPeople(judgement, verdict, criteria)


def people_against_checks(labels: dict[str, Label], checked: dict[str, bool | None]) -> Judgement | None:
    """People's labels against the hidden checks, where both exist: the same matrix figures, a person as
    the grader."""
    runs = [_judged(Rating("people", item, label.satisfied), checked.get(item)) for item, label in labels.items()
            if label.satisfied is not None and checked.get(item) is not None]
    return judge_all(runs) if runs else None
