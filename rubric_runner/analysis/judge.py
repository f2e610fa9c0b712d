"""How far a grader can be trusted, measured against hidden verification: its confusion matrix, the
loop's lift from the first attempt to the final answer, and the spend per verified success.

Only runs whose answers were verified count (``RunRecord.verification``). The ground truth is the
final answer's verification; a final answer that could not be verified is counted apart, never as a
pass and never in the matrix. A verdict other than ``satisfied`` is a rejection.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..records import CheckOutcome, RunHeader, Status, TaskRecord
from .prices import billed, cost_of

T = TypeVar("T")

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""


@dataclass(frozen=True)
class Rate:
    """``part`` of ``whole``, with its Wilson score 95% interval."""

    part: int
    whole: int

    @property
    def value(self) -> float | None:
        return self.part / self.whole if self.whole else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The Wilson score interval (sound for small samples and for 0 or 100%); None when ``whole`` is 0."""
        if not self.whole:
            return None
        n, p, z2 = self.whole, self.part / self.whole, Z95 * Z95
        center = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        return max(0.0, center - half), min(1.0, center + half)

    def __str__(self) -> str:
        """``1/4 (25.0%, 95% CI 4.6-69.9%)``, or ``-`` when there is nothing to count."""
        if not self.whole:
            return "-"
        low, high = self.interval
        return f"{self.part}/{self.whole} ({self.value:.1%}, 95% CI {100 * low:.1f}-{high:.1%})"


@dataclass(frozen=True)
class Judgement:
    """A set of runs' verdicts against their hidden verification, and what the loop and the runs cost."""

    runs: int
    """Runs whose answers were verified (the final answer passed, failed, or was unverifiable)."""
    satisfied_passed: int
    satisfied_failed: int
    rejected_passed: int
    rejected_failed: int
    unverifiable: int
    """Runs whose final answer could not be verified: in no cell of the matrix."""
    first_passed: int
    final_passed: int
    fixed: int
    """Runs whose first attempt failed and final answer passed."""
    broken: int
    """Runs whose first attempt passed and final answer failed."""
    tokens: int
    """Billed tokens of every run in the set, worker and grader."""
    cost: float | None
    """Estimated USD of every run in the set; None when a model has no price."""

    @property
    def false_satisfied(self) -> Rate:
        """Of the final answers that failed verification, those the grader accepted: its leniency."""
        return Rate(self.satisfied_failed, self.satisfied_failed + self.rejected_failed)

    @property
    def false_rejection(self) -> Rate:
        """Of the final answers that passed verification, those the grader rejected: its strictness."""
        return Rate(self.rejected_passed, self.rejected_passed + self.satisfied_passed)

    @property
    def error(self) -> Rate:
        """Verdicts that disagree with verification, of all verified final answers."""
        decided = self.runs - self.unverifiable
        return Rate(self.satisfied_failed + self.rejected_passed, decided)

    @property
    def first(self) -> Rate:
        """The first attempts that passed verification, of all verified runs (unverifiable ones do not pass)."""
        return Rate(self.first_passed, self.runs)

    @property
    def final(self) -> Rate:
        """The final answers that passed verification, of all verified runs."""
        return Rate(self.final_passed, self.runs)

    @property
    def lift(self) -> float | None:
        """The loop's lift: final pass rate minus first pass rate."""
        return (self.final_passed - self.first_passed) / self.runs if self.runs else None

    @property
    def tokens_per_success(self) -> float | None:
        return self.tokens / self.final_passed if self.final_passed else None

    @property
    def cost_per_success(self) -> float | None:
        return self.cost / self.final_passed if self.final_passed and self.cost is not None else None


@dataclass(frozen=True, slots=True)
class Judged:
    """What a judgement reads of one run: its verdict, its answers' verification, what it cost."""

    satisfied: bool
    verified_first: bool | None
    verified_final: bool | None
    verified_outcome: CheckOutcome | None
    """The final answer's verification outcome; None when it was not verified."""
    tokens: int
    cost: float | None


Task = tuple[RunHeader, TaskRecord]
"""A task as a judgement reads it: its run's header (who ran it) and its record."""


def judged(task: Task, prices: dict[str, dict[str, float]]) -> Judged:
    """What a judgement reads of a task."""
    header, record = task
    final = record.verification.final if record.verification else None
    return Judged(
        satisfied=record.status is Status.SATISFIED, verified_first=record.verified("first"),
        verified_final=record.verified("final"), verified_outcome=final.outcome if final else None,
        tokens=record.tokens(), cost=cost_of(billed(header, record.usage), prices),
    )


def judge(tasks: Iterable[Task], prices: dict[str, dict[str, float]]) -> Judgement | None:
    """The judgement of ``tasks``; None when none of them was verified."""
    return judge_all([judged(task, prices) for task in tasks])


def judge_all(runs: list[Judged]) -> Judgement | None:
    """The judgement of ``runs``; None when none of them was verified."""
    verified = [r for r in runs if r.verified_outcome is not None]
    if not verified:
        return None
    decided = [r for r in verified if r.verified_outcome is not CheckOutcome.UNVERIFIABLE]

    def count(satisfied: bool, passed: bool) -> int:
        return sum(r.satisfied is satisfied and (r.verified_final is True) is passed for r in decided)

    costs = [r.cost for r in runs]
    return Judgement(
        runs=len(verified),
        satisfied_passed=count(True, True),
        satisfied_failed=count(True, False),
        rejected_passed=count(False, True),
        rejected_failed=count(False, False),
        unverifiable=len(verified) - len(decided),
        first_passed=sum(r.verified_first is True for r in verified),
        final_passed=sum(r.verified_final is True for r in verified),
        fixed=sum(r.verified_first is False and r.verified_final is True for r in verified),
        broken=sum(r.verified_first is True and r.verified_final is False for r in verified),
        tokens=sum(r.tokens for r in runs),
        cost=None if None in costs else sum(costs),
    )


def grader_key(header: RunHeader) -> tuple[str, str]:
    """Who judged a run: the grader's model, and for a regrade its overrides (two graders of one model,
    e.g. with other prompts, rank apart)."""
    return header.grader.model or "?", " ".join(header.regraded_with or []) if header.regraded_from else ""


def grader_label(key: tuple[str, str]) -> str:
    """A ``grader_key`` as shown: a regrade's overrides (unescaped as typed), else the grader's model."""
    model, overrides = key
    return re.sub(r"\\(.)", r"\1", overrides) or model  # Hydra escapes a swept value's ${...}


SUMMARY_FIELDS = (
    "verified_runs", "satisfied_passed", "satisfied_failed", "rejected_passed", "rejected_failed", "unverifiable",
    "false_satisfied_rate", "false_rejection_rate", "error_rate", "first_passed", "final_passed", "first_pass_rate",
    "final_pass_rate", "lift", "tokens_per_success", "usd_per_success",
)
"""A judgement's columns in the summary files: the matrix's counts, the rates as fractions, the lift,
the spend per verified success."""


def summary_fields(judgement: Judgement | None) -> dict[str, Any]:
    """A judgement as the summary files' ``SUMMARY_FIELDS``; each None when nothing was verified."""
    if judgement is None:
        return dict.fromkeys(SUMMARY_FIELDS)
    j = judgement
    return {
        "verified_runs": j.runs, "satisfied_passed": j.satisfied_passed, "satisfied_failed": j.satisfied_failed,
        "rejected_passed": j.rejected_passed, "rejected_failed": j.rejected_failed, "unverifiable": j.unverifiable,
        "false_satisfied_rate": j.false_satisfied.value, "false_rejection_rate": j.false_rejection.value,
        "error_rate": j.error.value, "first_passed": j.first_passed, "final_passed": j.final_passed,
        "first_pass_rate": j.first.value, "final_pass_rate": j.final.value, "lift": j.lift,
        "tokens_per_success": j.tokens_per_success, "usd_per_success": j.cost_per_success,
    }


def judge_groups(items: Iterable[T], key: Callable[[T], Hashable], prices: dict[str, dict[str, float]],
                 of: Callable[[T, dict[str, dict[str, float]]], Judged] = judged) -> dict[Hashable, Judgement]:
    """One judgement per ``key`` of the items (records, or what ``of`` reads a ``Judged`` from),
    sorted by key; groups with no verified run are left out."""
    groups: dict[Hashable, list[Judged]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(of(item, prices))
    judged_groups = {k: judge_all(group) for k, group in sorted(groups.items())}
    return {k: j for k, j in judged_groups.items() if j is not None}


def ranked(judgements: dict[Hashable, Judgement]) -> list[tuple[Hashable, Judgement]]:
    """The graders from the fewest errors against verification to the most: by error rate, then
    false-satisfied rate (a lenient grader lets a broken answer end the loop), then more verified runs."""
    def order(item: tuple[Hashable, Judgement]) -> tuple[float, float, int]:
        judgement = item[1]
        return _or_worst(judgement.error.value), _or_worst(judgement.false_satisfied.value), -judgement.runs

    return sorted(judgements.items(), key=order)


def _or_worst(value: float | None) -> float:
    return 2.0 if value is None else value
