"""Which loop policy? Other policies replayed over a run's own records, with no model call.

A policy is a stop rule (after which grading pass the loop ends) and a return rule (which of the attempts
made it returns). Each run (``loop_value.Attempts``) is replayed pass by pass: the policy's answer is the
attempt it would return, its outcome that attempt's hidden checks (or, with no checks, its verdict), its
spend the run's tokens and USD when that pass ended (the passes it would not have made are not counted).

Return rules (``loop.returns``): ``last`` (the library's), ``best`` (most criteria passed, ties to the
later attempt), ``satisfied`` (the last attempt the grader marked satisfied, else the best). Stop rules
(``loop.stop``): ``none`` (the cap alone), ``no_gain:K`` (after K passes in a row that passed no more
criteria than the best before them), ``regression`` (after a pass that fails a criterion an earlier pass
passed); and ``grader.max_iterations`` = 1..N. A policy that would go on past the passes the run made
(a cap above the one that ended it, or past the run's own stop rule) is not replayable for that run:
counted, never guessed. Every policy is paired with the runs as they ran (their own policy).

Where a sweep also ran the loop under other policies (configurations alike but in ``loop.returns`` and
``loop.stop``: ``Attempts.siblings``), each such policy is replayed over the runs of the library's policy
and set beside the real runs of the same task and repeat (``beside_real``): the replay's prediction
against what the policy did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ..config.schema import STOP
from .loop_value import Attempts, by_group, final, outcomes
from .paired import PairedRates

RETURNS = ("last", "best", "satisfied")
"""The return rules, ``loop.returns``."""
AS_RUN = "as run"
"""What every policy is paired against: the runs as they ran (by default the library's, ``last``)."""
NOT_GRADED = -1
"""The score of a pass without criteria that passed no verdict (a grader_error): never the best."""


@dataclass(frozen=True)
class Policy:
    """A stop rule, a return rule, and a cap on the grading passes (None: the run's own)."""

    returns: str = "last"
    stop: str = "none"
    cap: int | None = None

    @property
    def name(self) -> str:
        """``last``, ``best``, ``stop=no_gain:1``, ``max_iterations=2``; with a return rule other than last
        on a stop or a cap, ``best, stop=regression``."""
        parts = [f"stop={self.stop}"] if self.stop != "none" else []
        parts += [f"max_iterations={self.cap}"] if self.cap is not None else []
        if not parts:
            return self.returns
        return ", ".join([self.returns, *parts]) if self.returns != "last" else ", ".join(parts)


LIBRARY = Policy()
"""The library's policy: the last attempt, no stop rule but the cap."""


def patience(stop: str) -> int | None:
    """The K of ``no_gain:K`` (1 for ``no_gain``); None for another rule."""
    match = STOP.match(stop)
    if match is None or not stop.startswith("no_gain"):
        return None
    return int(match["k"] or 1)


def _score(criteria: tuple[tuple[str, bool], ...], satisfied: bool | None) -> int:
    return NOT_GRADED if not criteria and satisfied is None else sum(ok for _, ok in criteria)


def scores(run: Attempts) -> list[int]:
    """Each grading pass's criteria passed (``NOT_GRADED`` for a pass that gave no verdict)."""
    criteria = list(run.criteria) + [()] * (len(run.satisfied) - len(run.criteria))
    return [_score(c, s) for c, s in zip(criteria, run.satisfied)]


def stops_after(stop: str, passes: list[tuple[tuple[str, bool], ...]]) -> int | None:
    """The pass (from 1) after which ``stop`` ends the loop over ``passes`` (each pass's criteria); None
    when it never does."""
    k = patience(stop)
    best, flat, passed = None, 0, set()
    for number, criteria in enumerate(passes, start=1):
        if stop == "regression" and any(not ok and name in passed for name, ok in criteria):
            return number
        passed |= {name for name, ok in criteria if ok}
        score = sum(ok for _, ok in criteria) if criteria else NOT_GRADED
        flat = 0 if best is None or score > best else flat + 1
        best = score if best is None else max(best, score)
        if k is not None and flat >= k:
            return number
    return None


def returned(rule: str, scored: list[int], satisfied: list[bool | None]) -> int:
    """The attempt (from 1) ``rule`` returns of those graded by ``scored``'s passes."""
    if rule == "satisfied":
        marked = [number for number, ok in enumerate(satisfied, start=1) if ok]
        if marked:
            return marked[-1]
    if rule in ("best", "satisfied"):
        top = max(scored)
        return max(number for number, score in enumerate(scored, start=1) if score == top)
    return len(scored)


@dataclass(frozen=True)
class Replay:
    """One run under one policy: the passes it makes, the attempt it returns, that attempt's outcome and
    the spend; ``replayable`` False when it needs an attempt the run never made."""

    replayable: bool
    passes: int = 0
    attempt: int = 0
    outcome: bool | None = None
    tokens: int | None = None
    cost: float | None = None


def _criteria(run: Attempts) -> list[tuple[tuple[str, bool], ...]]:
    return [run.criteria[i] if i < len(run.criteria) else () for i in range(len(run.satisfied))]


def own_policy(run: Attempts) -> Policy:
    """The policy the run ran with (``no_gain`` as ``no_gain:1``)."""
    return Policy(run.returns, "no_gain:1" if run.stop == "no_gain" else run.stop)


def _went_on(run: Attempts) -> bool:
    """Whether the run's loop would have gone on past its last pass under a policy that allows more: its
    cap or its own stop rule ended it (a limit or a stop asked for would have cut any policy alike)."""
    made = len(run.satisfied)
    if run.verdicts[-1:] == ("max_iterations_reached",):
        return True
    return run.stop != "none" and run.verdicts[-1:] == ("needs_revision",) and stops_after(run.stop, _criteria(run)) == made


def replay(run: Attempts, policy: Policy, on: str) -> Replay:
    """``run`` as ``policy`` would have run it."""
    made = len(run.satisfied)
    if not made:  # nothing graded: every policy returns what the run did
        return Replay(True, 0, 0, final(run, on), run.tokens, run.cost)
    stop = stops_after(policy.stop, _criteria(run)) if policy.stop != "none" else None
    if policy.cap is not None and (stop is None or policy.cap < stop):
        stop = policy.cap
    if (stop is None or stop > made) and (policy.cap or run.cap or made) > made and _went_on(run):
        return Replay(False)  # it would have made passes the run never made
    passes = min(stop or made, made)
    scored, satisfied = scores(run), list(run.satisfied)
    attempt = returned(policy.returns, scored[:passes], satisfied[:passes])
    seen = outcomes(run, on)
    if passes == made and attempt == returned(run.returns, scored, satisfied):
        outcome = final(run, on)  # the answer the run ended with (after a limit, one no pass graded)
    else:
        outcome = seen[attempt - 1] if attempt <= len(seen) else None
    if passes == made:
        return Replay(True, passes, attempt, outcome, run.tokens, run.cost)
    tokens, cost = run.spent[passes - 1] if len(run.spent) >= passes else (None, None)
    return Replay(True, passes, attempt, outcome, tokens, cost)


@dataclass(frozen=True)
class Replayed:
    """One policy over one configuration's runs, against the runs as they ran."""

    group: str
    policy: Policy
    as_run: bool
    """The runs' own policy: the runs as they ran."""
    runs: int
    not_replayable: int
    passed: int
    known: int
    """Replayed runs whose returned attempt's outcome is known."""
    tokens: int | None
    """Over the replayed runs; None when a run's record does not say what a pass cost."""
    cost: float | None
    as_run_tokens: int
    """The same runs' tokens as they ran."""
    versus: PairedRates | None
    """The runs as they ran (the control) against the policy; None for the runs' own policy."""

    @property
    def name(self) -> str:
        """The policy's name; ``as run (last)`` for the runs' own."""
        return f"{AS_RUN} ({self.policy.name})" if self.as_run else self.policy.name

    @property
    def replayed(self) -> int:
        return self.runs - self.not_replayable

    @property
    def rate(self) -> float | None:
        return self.passed / self.known if self.known else None

    @property
    def token_change(self) -> float | None:
        """The tokens against the same runs as they ran (-0.25: a quarter fewer); None when undefined."""
        return None if self.tokens is None or not self.as_run_tokens else self.tokens / self.as_run_tokens - 1

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON: undefined ones null."""
        versus = self.versus
        return {
            "configuration": self.group, "policy": self.name, "runs": self.runs, "replayed": self.replayed,
            "not_replayable": self.not_replayable, "passed": self.passed, "known": self.known, "rate": self.rate,
            "tokens": self.tokens, "usd": self.cost, "as_run_tokens": self.as_run_tokens, "token_change": self.token_change,
            "versus_as_run": None if versus is None else {
                "pairs": versus.cases, "both": versus.both, "policy_only": versus.gained, "as_run_only": versus.lost,
                "neither": versus.neither, "difference": versus.difference, "interval": versus.interval, "p": versus.p,
                "test": versus.test if versus.cases else None, "why_no_interval": versus.why or None},
        }


def policies(cap: int, returns: str = "last") -> list[Policy]:
    """The policies replayed: the return rules, the stop rules (returning ``returns``), and the caps 1..``cap``."""
    found = [Policy(rule) for rule in RETURNS]
    found += [Policy(returns, stop) for stop in ("no_gain:1", "no_gain:2", "regression")]
    found += [Policy(returns, cap=k) for k in range(1, cap + 1)]
    return found


N = TypeVar("N", int, float)
"""What ``_sum`` adds: tokens, or USD."""


def _sum(values: list[N | None]) -> N | None:
    """The sum; None when a value is, or there is none (no run replayed)."""
    known = [value for value in values if value is not None]
    return sum(known) if values and len(known) == len(values) else None


def replay_group(group: str, runs: list[Attempts], chosen: list[Policy], on: str) -> list[Replayed]:
    """The runs as they ran, then each of ``chosen`` but their own policy, over one configuration's ``runs``,
    paired against the runs as they ran."""
    own = own_policy(runs[0])
    as_run = {id(run): replay(run, own, on) for run in runs}
    found = []
    for policy in [own, *[p for p in chosen if p != own]]:
        done = [(run, replay(run, policy, on)) for run in runs]
        kept = [(run, r) for run, r in done if r.replayable]
        known = [r.outcome for _, r in kept if r.outcome is not None]
        versus = None if policy == own else PairedRates.of((run.task, as_run[id(run)].outcome, r.outcome) for run, r in kept)
        found.append(Replayed(group, policy, policy == own, len(runs), len(done) - len(kept), sum(known), len(known),
                              _sum([r.tokens for _, r in kept]), _sum([r.cost for _, r in kept]),
                              sum(run.tokens for run, _ in kept), versus))
    return found


def siblings(group: str, groups: dict[str, list[Attempts]]) -> list[str]:
    """The configurations alike but in their policy to ``group`` (``Attempts.siblings``), when ``group``
    ran the library's policy; none otherwise."""
    first = groups[group][0]
    if own_policy(first) != LIBRARY or not first.siblings:
        return []
    return [other for other, members in groups.items() if other != group and members[0].siblings == first.siblings]


def replay_all(runs: list[Attempts], on: str, returns: str = "last", up_to: int | None = None) -> list[Replayed]:
    """Per configuration, in the runs' order: every policy (caps 1..``up_to``, or the configuration's own
    cap, and the policies its ``siblings`` ran) replayed over its runs."""
    found = []
    groups = by_group(runs)
    for group, members in groups.items():
        cap = up_to or max([run.cap for run in members] + [len(run.satisfied) for run in members])
        chosen = policies(cap, returns)
        chosen += [policy for other in siblings(group, groups) if (policy := own_policy(groups[other][0])) not in chosen]
        found += replay_group(group, members, chosen, on)
    return found


@dataclass(frozen=True)
class Beside:
    """A policy replayed over the runs of the library's policy (``group``), beside the real runs of the
    configuration alike but in its policy that ran it (``real``), paired on task and repeat where the replay
    is replayable: the replay's outcomes and spend, then the real ones."""

    group: str
    real: str
    policy: Policy
    pairs: int
    predicted: tuple[int, int]
    """The replay's answers passed, and those whose outcome is known."""
    passed: tuple[int, int]
    """The real runs' final answers passed, and those whose outcome is known."""
    agreed: tuple[int, int]
    """The pairs whose replayed and real outcomes are alike, and those with both known."""
    predicted_tokens: int | None
    tokens: int
    predicted_cost: float | None
    cost: float | None

    @property
    def token_change(self) -> float | None:
        """The real runs' tokens against the replay's (0.004: 0.4% more); None when undefined."""
        return None if not self.predicted_tokens else self.tokens / self.predicted_tokens - 1

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON: undefined ones null."""
        def side(counts: tuple[int, int], tokens: int | None, cost: float | None) -> dict[str, object]:
            return {"passed": counts[0], "known": counts[1], "rate": counts[0] / counts[1] if counts[1] else None,
                    "tokens": tokens, "usd": cost}

        return {"configuration": self.group, "policy": self.policy.name, "real_configuration": self.real, "pairs": self.pairs,
                "replayed": side(self.predicted, self.predicted_tokens, self.predicted_cost),
                "real": side(self.passed, self.tokens, self.cost),
                "agreed": self.agreed[0], "compared": self.agreed[1], "token_change": self.token_change}


def _known(outcomes: list[bool | None]) -> tuple[int, int]:
    known = [value for value in outcomes if value is not None]
    return sum(known), len(known)


def beside_real(runs: list[Attempts], on: str) -> list[Beside]:
    """Per configuration that ran the library's policy, in the runs' order, and each of its ``siblings``:
    the sibling's policy replayed over the first's runs, beside the sibling's runs of the same task and repeat."""
    found = []
    groups = by_group(runs)
    for group, members in groups.items():
        for other in siblings(group, groups):
            policy = own_policy(groups[other][0])
            theirs = {(run.task, run.repeat): run for run in groups[other]}
            done = [(replay(run, policy, on), theirs[run.task, run.repeat]) for run in members if (run.task, run.repeat) in theirs]
            pairs = [(replayed, real) for replayed, real in done if replayed.replayable]
            both = [(r.outcome, final(real, on)) for r, real in pairs if r.outcome is not None and final(real, on) is not None]
            found.append(Beside(
                group, other, policy, len(pairs), _known([r.outcome for r, _ in pairs]), _known([final(real, on) for _, real in pairs]),
                (sum(replayed == real for replayed, real in both), len(both)),
                _sum([r.tokens for r, _ in pairs]), sum(real.tokens for _, real in pairs),
                _sum([r.cost for r, _ in pairs]), _sum([real.cost for _, real in pairs])))
    return found
