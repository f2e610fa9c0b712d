"""Loop policies replayed over recorded passes: the attempt each returns, its outcome, its spend, and the
runs a policy cannot be replayed on."""

from __future__ import annotations

from rubric_runner.analysis.loop_value import CHECKS, VERDICTS, Attempts
from rubric_runner.analysis.policies import Policy, beside_real, patience, replay, replay_all, stops_after

A, B, C = "a", "b", "c"


def run(checked, criteria, verdicts, spent, task="t", cap=3, tokens=None) -> Attempts:
    satisfied = tuple(None if v == "grader_error" else v == "satisfied" for v in verdicts)
    return Attempts(index=0, group="g", arm="rubric", pairing="", task=task, repeat=0, checked=tuple(checked),
                    satisfied=satisfied, final_checked=checked[-1] if checked else None,
                    final_satisfied=verdicts[-1] == "satisfied", tokens=tokens if tokens is not None else spent[-1][0],
                    cost=None, spent=tuple(spent), criteria=tuple(tuple(c) for c in criteria), verdicts=tuple(verdicts), cap=cap)


BROKEN = run([True, False], [[(A, True), (B, True)], [(A, True), (B, False)]], ["needs_revision", "max_iterations_reached"],
             [(100, None), (250, None)], cap=2)
FLAT = run([False, False, False], [[(A, True), (B, False)], [(A, True), (B, False)], [(A, True), (B, False)]],
           ["needs_revision", "needs_revision", "max_iterations_reached"], [(100, None), (220, None), (340, None)])


def test_best_returns_the_earlier_passing_attempt_where_last_returns_the_broken_one():
    assert replay(BROKEN, Policy("last"), CHECKS) == replay(BROKEN, Policy("last"), CHECKS)
    last, best = replay(BROKEN, Policy("last"), CHECKS), replay(BROKEN, Policy("best"), CHECKS)
    assert (last.attempt, last.outcome, last.tokens) == (2, False, 250)
    assert (best.attempt, best.outcome, best.tokens) == (1, True, 250)  # it made both passes: both are paid


def test_ties_go_to_the_later_attempt_and_satisfied_prefers_a_satisfied_one():
    tied = run([False, True], [[(A, True)], [(A, True)]], ["needs_revision", "satisfied"], [(10, None), (20, None)])
    assert replay(tied, Policy("best"), CHECKS).attempt == 2
    odd = run([True, False], [[(A, True), (B, True)], [(A, True)]], ["satisfied", "needs_revision"], [(1, None), (2, None)])
    assert replay(odd, Policy("satisfied"), VERDICTS).attempt == 1


def test_no_gain_stops_after_k_flat_passes_and_counts_only_the_passes_made():
    one = replay(FLAT, Policy(stop="no_gain:1"), CHECKS)
    assert (one.passes, one.attempt, one.tokens) == (2, 2, 220)
    two = replay(FLAT, Policy(stop="no_gain"), CHECKS)
    assert two == one and patience("no_gain") == 1 and patience("no_gain:2") == 2 and patience("regression") is None
    assert replay(FLAT, Policy(stop="no_gain:2"), CHECKS).passes == 3


def test_regression_stops_at_the_pass_that_fails_a_passed_criterion():
    assert stops_after("regression", [[(A, True), (B, False)], [(A, False), (B, True)], [(A, True), (B, True)]]) == 2
    assert stops_after("regression", [[(A, False)], [(A, True)]]) is None
    found = replay(BROKEN, Policy("best", "regression"), CHECKS)
    assert (found.passes, found.attempt, found.outcome) == (2, 1, True)


def test_a_cap_above_the_one_that_ended_the_run_is_not_replayable_and_a_lower_cap_is():
    assert not replay(FLAT, Policy(cap=4), CHECKS).replayable
    ended = run([False, True], [[(A, False)], [(A, True)]], ["needs_revision", "satisfied"], [(5, None), (9, None)])
    assert replay(ended, Policy(cap=4), CHECKS).attempt == 2  # satisfied at pass 2: a higher cap changes nothing
    low = replay(FLAT, Policy(cap=1), CHECKS)
    assert (low.passes, low.tokens) == (1, 100)


def test_the_table_pairs_each_policy_with_the_runs_as_they_ran_and_counts_the_unreplayable():
    runs = [BROKEN, run(*[[True, False], [[(A, True), (B, True)], [(A, False), (B, True)]], ["needs_revision", "max_iterations_reached"],
                          [(100, None), (200, None)]], task="u", cap=2), FLAT]
    rows = {r.name: r for r in replay_all(runs, CHECKS, up_to=3)}
    assert "last" not in rows  # the runs' own policy is the as-run row
    assert rows["as run (last)"].versus is None and (rows["as run (last)"].passed, rows["as run (last)"].known) == (0, 3)
    best = rows["best"]
    assert (best.passed, best.known, best.versus.gained, best.versus.lost) == (2, 3, 2, 0)
    assert best.token_change == 0.0 and best.as_dict()["usd"] is None  # unpriced: null, never 0
    capped = rows["max_iterations=3"]
    assert (capped.not_replayable, capped.replayed) == (2, 1)  # the two runs a cap of 2 ended
    assert rows["max_iterations=1"].tokens == 100 + 100 + 100
    empty = replay_all([run([None], [[(A, True)]], ["needs_revision"], [(1, None)])], CHECKS)[0]
    assert empty.rate is None and empty.as_dict()["rate"] is None


def test_a_run_its_own_stop_ended_is_not_replayed_past_it_but_a_satisfied_one_is():
    stopped = run([False, False], [[(A, True), (B, False)], [(A, True), (B, False)]], ["needs_revision", "needs_revision"],
                  [(100, None), (220, None)])
    stopped = Attempts(**{**stopped.__dict__, "stop": "no_gain:1"})
    assert not replay(stopped, Policy("last"), CHECKS).replayable  # it would have gone on to pass 3
    assert replay(stopped, Policy("best", "no_gain:1"), CHECKS).replayable
    assert replay(stopped, Policy(cap=2), CHECKS).tokens == 220
    kept = Attempts(**{**BROKEN.__dict__, "returns": "best", "final_checked": True})  # it answered with attempt 1
    assert replay(kept, Policy("last"), CHECKS).outcome is False and replay(kept, Policy("best"), CHECKS).outcome is True


def test_a_policy_another_configuration_ran_is_replayed_beside_its_runs_of_the_same_tasks():
    def of(run, group, siblings, returns="last", stop="none", **changes):
        return Attempts(**{**run.__dict__, "group": group, "siblings": siblings, "returns": returns, "stop": stop, **changes})

    kept = of(BROKEN, "best", "s", "best", final_checked=True)  # it answered with attempt 1
    runs = [of(BROKEN, "last", "s"), of(FLAT, "last", "s", task="u"), kept, of(BROKEN, "other", "t", "best"),
            of(FLAT, "stop", "s", stop="no_gain", task="u", checked=(False, False), satisfied=(False, False), spent=FLAT.spent[:2],
               tokens=222, criteria=FLAT.criteria[:2], verdicts=("needs_revision", "needs_revision"))]
    found = {b.real: b for b in beside_real(runs, CHECKS)}
    assert sorted(found) == ["best", "stop"]  # "other" differs in more than the policy; "last" is the source
    best = found["best"]
    assert (best.group, best.policy, best.pairs, best.predicted, best.passed, best.agreed) == ("last", Policy("best"), 1, (1, 1), (1, 1), (1, 1))
    stop = found["stop"]  # paired on task "u" alone; no_gain read as no_gain:1
    assert (stop.policy, stop.pairs, stop.predicted_tokens, stop.tokens) == (Policy("last", "no_gain:1"), 1, 220, 222)
    assert round(stop.token_change, 4) == 0.0091 and stop.as_dict()["real"]["usd"] is None
    names = {r.name for r in replay_all(runs, CHECKS) if r.group == "last"}
    assert "best" in names and "stop=no_gain:1" in names and "stop=no_gain" not in names
    assert beside_real([of(BROKEN, "last", ""), of(BROKEN, "best", "", "best")], CHECKS) == []  # no key: never paired
