"""How far a grader can be trusted, measured against hidden verification: its confusion matrix and
the rates a reviewer reads off it, the loop's lift from the first attempt to the final answer, pass@k
on the checks, the pass rate corrected for the grader's errors, and the spend per verified success.

The ground truth is the final answer's hidden verification. The matrix holds the runs whose final
answer passed or failed and whose verdict was one: ``satisfied`` (accepted), or ``failed`` or
``max_iterations_reached`` (rejected). A run that ended otherwise (``grader_error``, ``unsupported``,
a limit, an error) is counted apart, by its status, and so is one whose last verdict the library marked
``unverified`` (the grader under-reported its checklist: a rejection by the grader's failure, not the
answer's); an unverifiable final answer is counted apart too: neither is in the matrix nor in a pass rate's denominator. When a task has several runs, every
interval resamples whole tasks (``intervals.cluster_bootstrap``), under the bootstrap's rule (at least
``intervals.MIN_TASKS`` tasks, not all alike; else a rate's interval counts each task once and another
figure has none, its reason said); otherwise it is exact on the counts. A configuration of one grading
pass a run has no lift: its first answer is its final one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from ..records import CheckOutcome, RunHeader, RunKind, Status
from ..records.passk import PassK, pass_k
from . import intervals
from .intervals import Interval
from .numbers import fmt_interval, fmt_pct, rounded
from .paired import PairedRates, fmt_difference, fmt_test

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

VERDICTS = {Status.SATISFIED: True, Status.FAILED: False, Status.MAX_ITERATIONS_REACHED: False}
"""The statuses that are the grader's verdict on a final answer: accepted (True) or rejected."""


ONE_PASS = "none: one grading pass a run, its first answer is its final one"
"""Why a configuration of one grading pass has no lift (it is 0 by construction)."""


def one_pass(header: RunHeader) -> bool:
    """Whether a run's configuration allows one grading pass (``loop.arm=single`` or
    ``grader.max_iterations=1``), so its first answer is its final one; a regrade's answers are its
    original run's, so never."""
    arm = (header.config.get("loop") or {}).get("arm")
    return header.kind is not RunKind.REGRADE and (arm == "single" or header.grader.max_iterations == 1)


@dataclass(frozen=True)
class Rate:
    """``part`` of ``whole``, with its 95% interval: Wilson's, or when the runs are repeats of fewer
    ``tasks``, the task-clustered one (``clustered``: the bootstrap's, or ``intervals.task_wilson``)."""

    part: int
    whole: int
    tasks: int | None = None
    """The tasks behind the runs, when some task has several runs (the interval is then clustered)."""
    clustered: Interval | None = None

    @property
    def value(self) -> float | None:
        return self.part / self.whole if self.whole else None

    @property
    def interval(self) -> Interval | None:
        if not self.whole:
            return None
        return self.clustered if self.tasks is not None else intervals.wilson(self.part, self.whole)

    def __str__(self) -> str:
        """``1/4 (25.0%, 95% CI 4.6-69.9%)``; ``7/8 (87.5%, 95% CI 50.0-100.0%, 3 tasks)`` when clustered;
        ``-`` when there is nothing to count."""
        if not self.whole:
            return "-"
        interval = self.interval
        tasks = f", {self.tasks} task{'' if self.tasks == 1 else 's'}" if self.tasks is not None else ""
        return f"{self.part}/{self.whole} ({fmt_pct(self.value)}{', ' + fmt_interval(interval) if interval else ''}{tasks})"


@dataclass(frozen=True)
class Estimate:
    """A figure that is not a count's share (a mean of two rates, a difference, a corrected rate), with
    its 95% interval, or why it has none."""

    value: float | None
    interval: Interval | None
    why: str = ""
    """Why there is no interval (``intervals.no_interval``), or no figure (``ONE_PASS``)."""

    def __str__(self) -> str:
        """``37.5% (95% CI 12.0-70.1%)``, ``37.5% (no interval: 3 tasks, fewer than 10)``, or ``-``."""
        if self.value is None:
            return self.why or "-"
        if self.interval:
            return f"{fmt_pct(self.value)} ({fmt_interval(self.interval)})"
        return fmt_pct(self.value) + (f" ({self.why})" if self.why else "")


class Tally(NamedTuple):
    """What a set of runs adds up to: the matrix, the answers' checks, and the verdicts."""

    satisfied_passed: int = 0
    satisfied_failed: int = 0
    rejected_passed: int = 0
    rejected_failed: int = 0
    final_passed: int = 0
    final_decided: int = 0
    """Final answers that passed or failed their checks (not unverifiable)."""
    first_passed: int = 0
    first_decided: int = 0
    kept: int = 0
    """Runs whose first and final answers both passed."""
    broken: int = 0
    fixed: int = 0
    never: int = 0
    """Runs whose first and final answers both failed."""
    satisfied: int = 0
    verdicts: int = 0
    """Runs with a verdict (``VERDICTS``), verified or not; ``satisfied`` of them accepted."""


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def false_satisfied(t: Tally) -> float | None:
    return _share(t.satisfied_failed, t.satisfied_failed + t.rejected_failed)


def false_rejection(t: Tally) -> float | None:
    return _share(t.rejected_passed, t.rejected_passed + t.satisfied_passed)


def false_discovery(t: Tally) -> float | None:
    return _share(t.satisfied_failed, t.satisfied_failed + t.satisfied_passed)


def balanced_error(t: Tally) -> float | None:
    fs, fr = false_satisfied(t), false_rejection(t)
    return None if fs is None or fr is None else (fs + fr) / 2


def first_pass(t: Tally) -> float | None:
    return _share(t.first_passed, t.first_decided)


def final_pass(t: Tally) -> float | None:
    return _share(t.final_passed, t.final_decided)


def corrected_pass(t: Tally) -> float | None:
    """Rogan–Gladen: the grader's satisfied rate over every run with a verdict, corrected with its
    sensitivity (1 - false rejection) and specificity (1 - false satisfied) on the verified ones."""
    fs, fr, apparent = false_satisfied(t), false_rejection(t), _share(t.satisfied, t.verdicts)
    if fs is None or fr is None or apparent is None:
        return None
    return intervals.rogan_gladen(apparent, 1 - fr, 1 - fs)


RATES: dict[str, tuple[Callable[[Tally], float | None], Callable[[Tally], tuple[int, int]]]] = {
    "false_satisfied": (false_satisfied, lambda t: (t.satisfied_failed, t.satisfied_failed + t.rejected_failed)),
    "false_rejection": (false_rejection, lambda t: (t.rejected_passed, t.rejected_passed + t.satisfied_passed)),
    "false_discovery": (false_discovery, lambda t: (t.satisfied_failed, t.satisfied_failed + t.satisfied_passed)),
    "first": (first_pass, lambda t: (t.first_passed, t.first_decided)),
    "final": (final_pass, lambda t: (t.final_passed, t.final_decided)),
}
"""The judgement's rates: each a function of the tally, and its (part, whole)."""
ESTIMATES = {"balanced_error": balanced_error, "corrected_pass": corrected_pass}


@dataclass(frozen=True, slots=True)
class Judged:
    """What a judgement reads of one run: how it ended, its answers' verification, what it cost, and
    which task and transcript it was."""

    status: Status
    verified_first: bool | None
    verified_final: bool | None
    """Whether the first attempt and the final answer passed their checks; None when not decided."""
    verified_outcome: CheckOutcome | None
    """The final answer's verification outcome; None when it was not verified."""
    tokens: int | None
    """Billed tokens of the run, worker and grader (a regrade's: with its transcript's worker); None unknown."""
    cost: float | None
    task: Hashable = None
    """Runs of one task are repeats: intervals resample tasks."""
    transcript: str | None = None
    """Which transcript was judged: graders rank only on the same ones."""
    unverified: bool = False
    """The last verdict was one the library marked unverified: no verdict on the answer."""
    one_pass: bool = False
    """Its configuration allows one grading pass (``one_pass``): its first answer is its final one."""

    @property
    def verdict(self) -> bool | None:
        """Accepted (True), rejected (False), or None when the run ended without a verdict on its answer."""
        return None if self.unverified else VERDICTS.get(self.status)

    @property
    def ending(self) -> str:
        """How a run outside the matrix ended: its status, or ``unverified``."""
        return "unverified" if self.unverified and self.status in VERDICTS else self.status.value


def tally(run: Judged) -> Tally:
    """One run's contribution to a tally."""
    verdict = run.verdict
    first, final = run.verified_first, run.verified_final
    decided = run.verified_outcome is not None and run.verified_outcome is not CheckOutcome.UNVERIFIABLE
    matrix = (verdict, final) if decided else None
    paired = (first, final)
    return Tally(
        satisfied_passed=int(matrix == (True, True)), satisfied_failed=int(matrix == (True, False)),
        rejected_passed=int(matrix == (False, True)), rejected_failed=int(matrix == (False, False)),
        final_passed=int(final is True), final_decided=int(final is not None),
        first_passed=int(first is True), first_decided=int(first is not None),
        kept=int(paired == (True, True)), broken=int(paired == (True, False)),
        fixed=int(paired == (False, True)), never=int(paired == (False, False)),
        satisfied=int(verdict is True), verdicts=int(verdict is not None),
    )


def _added(tallies: Iterable[Tally]) -> Tally:
    return Tally(*map(sum, zip(*tallies, strict=True))) if tallies else Tally()


@dataclass(frozen=True)
class Judgement:
    """A set of runs' verdicts against their hidden verification, and what the loop and the runs cost."""

    tally: Tally
    runs: int
    """Runs whose final answer was verified (passed, failed, or unverifiable)."""
    unverifiable: int
    """Runs whose final answer could not be checked: in no cell of the matrix, in no pass rate."""
    outside: dict[str, int]
    """Runs whose answer was checked but whose run ended without a verdict, by status (``grader_error``,
    ``unsupported``, a limit, or ``unverified``): counted apart, in no cell of the matrix."""
    tasks: int
    repeated: bool
    """Some task has several runs: the intervals resample tasks."""
    tokens: int | None
    cost: float | None
    transcripts: frozenset[str] = frozenset()
    per_task: tuple[Tally, ...] = ()
    """Each task's tally."""
    clustered: dict[str, Interval | None] = field(default_factory=dict)
    """Each figure's task-clustered interval, when ``repeated``."""
    pass_k: PassK | None = None
    """pass@1, pass@k and pass^k on the hidden checks of the final answers (unverifiable ones left out)."""
    single_pass: bool = False
    """Every run's configuration allows one grading pass: the lift is 0 by construction, so there is none."""

    def __getattr__(self, name: str) -> Any:
        if name in Tally._fields:
            return getattr(self.tally, name)
        raise AttributeError(name)

    def _rate(self, name: str) -> Rate:
        counts = RATES[name][1]
        part, whole = counts(self.tally)
        if not self.repeated:
            return Rate(part, whole)
        sizes = [size for size in (counts(t)[1] for t in self.per_task) if size]
        interval = self.clustered.get(name) or intervals.task_wilson(part, whole, sizes)
        return Rate(part, whole, len(sizes), interval)

    def _tasks(self, counted: Callable[[Tally], int]) -> int:
        """The tasks with some run that ``counted`` counts."""
        return sum(counted(t) > 0 for t in self.per_task)

    @property
    def false_satisfied(self) -> Rate:
        """Of the final answers that failed their checks, those the grader accepted: its leniency."""
        return self._rate("false_satisfied")

    @property
    def false_rejection(self) -> Rate:
        """Of the final answers that passed their checks, those the grader rejected: its strictness."""
        return self._rate("false_rejection")

    @property
    def false_discovery(self) -> Rate:
        """Of the grader's ``satisfied`` verdicts on checked answers, those whose answer failed."""
        return self._rate("false_discovery")

    @property
    def first(self) -> Rate:
        """First attempts that passed their checks, of those checked (unverifiable ones left out)."""
        return self._rate("first")

    @property
    def final(self) -> Rate:
        """Final answers that passed their checks, of those checked (unverifiable ones left out)."""
        return self._rate("final")

    @property
    def balanced_error(self) -> Estimate:
        """The mean of the false-satisfied and false-rejection rates: what a grader gets wrong, whatever
        share of the answers pass (the error rate over all answers moves with that share); its interval
        combines the two rates' (when tasks repeat, the bootstrap's where it gives one)."""
        fs, fr = self.false_satisfied, self.false_rejection
        if fs.value is None or fr.value is None:
            return Estimate(None, None)
        interval = self.clustered.get("balanced_error") or intervals.mean_of_two((fs.value, fs.interval), (fr.value, fr.interval))
        matrix = self._tasks(lambda t: t.satisfied_passed + t.satisfied_failed + t.rejected_passed + t.rejected_failed)
        return Estimate(balanced_error(self.tally), interval, "" if interval else intervals.no_interval(matrix))

    @cached_property
    def loop(self) -> PairedRates:
        """The first attempts (the control) against the final answers, over the runs whose two answers were
        both checked, by task."""
        return PairedRates(tuple(counts for t in self.per_task if sum(counts := (t.kept, t.broken, t.fixed, t.never))))

    @property
    def lift(self) -> Estimate:
        """What the loop adds: the final answers' pass rate minus the first attempts' (``loop``'s difference and
        interval); none for a configuration of one grading pass (``ONE_PASS``)."""
        if self.single_pass:
            return Estimate(None, None, ONE_PASS)
        loop = self.loop
        return Estimate(loop.difference, loop.interval, loop.why)

    @property
    def lift_p(self) -> float | None:
        """``loop``'s p: the exact McNemar p of ``fixed`` against ``broken``, or when tasks repeat the sign test
        on tasks; None without a lift."""
        return None if self.single_pass else self.loop.p

    @property
    def corrected_pass(self) -> Estimate:
        """Rogan–Gladen's pass rate: the grader's satisfied rate over every run with a verdict (checked
        or not), corrected for its measured sensitivity and specificity; its interval is the bootstrap's
        over the tasks with a verdict, or none (why said)."""
        value, interval = corrected_pass(self.tally), self.clustered.get("corrected_pass")
        why = "" if value is None or interval else intervals.no_interval(self._tasks(lambda task: task.verdicts))
        return Estimate(value, interval, why)

    @property
    def tokens_per_success(self) -> float | None:
        return self.tokens / self.final_passed if self.final_passed and self.tokens is not None else None

    @property
    def cost_per_success(self) -> float | None:
        return self.cost / self.final_passed if self.final_passed and self.cost is not None else None


def _of_counts(figure: Callable[[Tally], float | None]) -> Callable[[tuple[int, ...]], float | None]:
    """``figure`` of a tally given as its counts (what the bootstrap sums)."""
    return lambda counts: figure(Tally(*counts))


def judge_all(runs: list[Judged]) -> Judgement | None:
    """The judgement of ``runs``; None when none of them was verified."""
    verified = [r for r in runs if r.verified_outcome is not None]
    if not verified:
        return None
    tasks = [("run", i) if run.task is None else run.task for i, run in enumerate(runs)]  # unnamed: a task each
    by_task: dict[Hashable, list[Tally]] = {}
    for run, task in zip(runs, tasks):  # a verdict without verification counts in the grader's apparent pass rate
        if run.verified_outcome is not None or run.verdict is not None:
            by_task.setdefault(task, []).append(tally(run))
    per_task = [_added(tallies) for tallies in by_task.values()]
    total = _added(per_task)
    repeated = any(len(tallies) > 1 for tallies in by_task.values())
    figures = {name: f for name, (f, _) in RATES.items()} | ESTIMATES if repeated else {"corrected_pass": corrected_pass}
    found = intervals.cluster_bootstrap(per_task, [_of_counts(f) for f in figures.values()])
    clustered = dict(zip(figures, found))
    outside = Counter(r.ending for r in verified
                      if r.verdict is None and r.verified_outcome is not CheckOutcome.UNVERIFIABLE)
    checks: dict[Hashable, list[int]] = {}
    for run, task in zip(runs, tasks):
        if run.verified_final is not None:
            n_c = checks.setdefault(task, [0, 0])
            n_c[0] += 1
            n_c[1] += run.verified_final
    tokens = [r.tokens for r in runs if r.tokens is not None]
    costs = [r.cost for r in runs if r.cost is not None]
    return Judgement(
        tally=total, runs=len(verified),
        unverifiable=sum(r.verified_outcome is CheckOutcome.UNVERIFIABLE for r in verified),
        outside=dict(sorted(outside.items())), tasks=len({t for r, t in zip(runs, tasks) if r.verified_outcome is not None}),
        repeated=repeated,
        tokens=sum(tokens) if len(tokens) == len(runs) else None, cost=sum(costs) if len(costs) == len(runs) else None,
        transcripts=frozenset(r.transcript for r in verified if r.transcript is not None), per_task=tuple(per_task),
        clustered=clustered,
        pass_k=pass_k((n, c) for n, c in checks.values()),
        single_pass=all(run.one_pass for run in runs),
    )


def judge_groups(items: Iterable[T], key: Callable[[T], K], prices: dict[str, dict[str, float]],
                 of: Callable[[T, dict[str, dict[str, float]]], Judged]) -> dict[K, Judgement]:
    """One judgement per ``key`` of the items (what ``of`` reads a ``Judged`` from), sorted by key; groups
    with no verified run are left out."""
    groups: dict[K, list[Judged]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(of(item, prices))
    judged_groups = {k: judge_all(group) for k, group in sorted(groups.items())}
    return {k: j for k, j in judged_groups.items() if j is not None}


RANK_RULE = ("graders are ranked only against graders that judged the same transcripts, by balanced error "
             "(the mean of the false-satisfied and false-rejection rates), lowest first; equal balanced "
             "errors share a rank; a grader with no other on its transcripts, or without both passing and "
             "failing answers, is not ranked")


def ranking(judgements: dict[K, Judgement]) -> list[tuple[int | None, K, Judgement]]:
    """The graders as ``RANK_RULE`` ranks them: (rank or None, key, judgement), ranked ones first, by
    transcripts judged, then rank, then the lower false-satisfied rate."""
    by_transcripts: dict[frozenset[str], list[K]] = {}
    for key, judgement in judgements.items():
        by_transcripts.setdefault(judgement.transcripts, []).append(key)
    ranked: list[tuple[int | None, K, Judgement]] = []
    unranked: list[tuple[int | None, K, Judgement]] = []
    for keys in sorted(by_transcripts.values(), key=len, reverse=True):
        scored = [k for k in keys if judgements[k].balanced_error.value is not None]
        if len(scored) < 2:
            unranked += [(None, k, judgements[k]) for k in keys]
            continue
        order = sorted(scored, key=lambda k: (judgements[k].balanced_error.value, _or_worst(judgements[k].false_satisfied.value)))
        errors = [rounded(judgements[k].balanced_error.value, 9) for k in order]
        ranked += [(errors.index(error) + 1, k, judgements[k]) for k, error in zip(order, errors)]
        unranked += [(None, k, judgements[k]) for k in keys if k not in scored]
    return ranked + unranked


def ranking_line(rank: int | None, label: str, j: Judgement) -> str:
    """One grader of a ranking, for the console."""
    return (f"{rank if rank is not None else '-'}. {label}: balanced error {j.balanced_error}; false satisfied "
            f"{j.false_satisfied}; false rejection {j.false_rejection}; false discovery {j.false_discovery}; "
            f"unverifiable {j.unverifiable}" + "".join(f"; {status} {n}" for status, n in j.outside.items()))


def _or_worst(value: float | None) -> float:
    return 2.0 if value is None else value


def fmt_lift(j: Judgement) -> str:
    """``+20.0 pts (95% CI -15.2 to 52.1), p = 1.0 (exact McNemar); fixed 1, broken 0``: the lift in percentage
    points, its paired interval (or why it has none), its test and the runs it counts; why there is no lift
    for one grading pass a run."""
    if j.lift.value is None:
        return j.lift.why or "-"
    return f"{fmt_difference(j.loop)}, {fmt_test(j.loop)}; fixed {j.fixed}, broken {j.broken}"


SUMMARY_FIELDS = (
    "verified_runs", "satisfied_passed", "satisfied_failed", "rejected_passed", "rejected_failed", "unverifiable",
    "outside_matrix", "false_satisfied_rate", "false_discovery_rate", "false_rejection_rate", "balanced_error",
    "first_passed", "first_checked", "final_passed", "final_checked", "first_pass_rate", "final_pass_rate", "lift",
    "lift_p", "fixed", "broken", "pass_at_1", "pass_at_k", "pass_hat_k", "pass_k", "corrected_pass_rate",
    "tokens_per_success", "usd_per_success",
)
"""A judgement's columns in the summary files: the matrix's counts and what is counted apart, the rates
as fractions, the lift and its test, pass@k on the checks, the corrected pass rate, the spend per
verified success."""


def summary_fields(judgement: Judgement | None) -> dict[str, Any]:
    """A judgement as the summary files' ``SUMMARY_FIELDS``; each None when nothing was verified."""
    if judgement is None:
        return dict.fromkeys(SUMMARY_FIELDS)
    j, k = judgement, judgement.pass_k
    return {
        "verified_runs": j.runs, "satisfied_passed": j.satisfied_passed, "satisfied_failed": j.satisfied_failed,
        "rejected_passed": j.rejected_passed, "rejected_failed": j.rejected_failed, "unverifiable": j.unverifiable,
        "outside_matrix": j.outside, "false_satisfied_rate": rounded(j.false_satisfied.value),
        "false_discovery_rate": rounded(j.false_discovery.value), "false_rejection_rate": rounded(j.false_rejection.value),
        "balanced_error": rounded(j.balanced_error.value), "first_passed": j.first_passed, "first_checked": j.first_decided,
        "final_passed": j.final_passed, "final_checked": j.final_decided, "first_pass_rate": rounded(j.first.value),
        "final_pass_rate": rounded(j.final.value), "lift": rounded(j.lift.value), "lift_p": rounded(j.lift_p),
        "fixed": j.fixed, "broken": j.broken, "pass_at_1": rounded(k.at_1) if k else None,
        "pass_at_k": rounded(k.at_k) if k else None, "pass_hat_k": rounded(k.all_k) if k else None,
        "pass_k": k.k if k else None, "corrected_pass_rate": rounded(j.corrected_pass.value),
        "tokens_per_success": rounded(j.tokens_per_success, 2), "usd_per_success": rounded(j.cost_per_success),
    }
