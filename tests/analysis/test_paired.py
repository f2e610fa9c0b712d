"""One paired engine: the loop's lift, the rubric loop against a control, a policy against the runs as they ran,
and compare's BASE against NEW give the same figures for the same outcomes, and name their test."""

from __future__ import annotations

import pytest

from rubric_runner.analysis import loop_value
from rubric_runner.analysis.compare import Case, compare
from rubric_runner.analysis.intervals import mcnemar, paired_difference, sign_test
from rubric_runner.analysis.judge import Judged, fmt_lift, judge_all
from rubric_runner.analysis.paired import MCNEMAR, SIGN_TEST, PairedRates, fmt_difference, fmt_test
from rubric_runner.records import CheckOutcome, Status

# (task, the control's outcome, the treatment's): t1 twice, so the task is the unit
OUTCOMES = [("t1", False, True), ("t1", False, True), ("t2", True, False), ("t3", True, True), ("t4", False, False),
            ("t5", False, True)]


def _lift(outcomes) -> PairedRates:
    runs = [Judged(status=Status.SATISFIED if after else Status.FAILED, verified_first=before, verified_final=after,
                   verified_outcome=CheckOutcome.PASSED if after else CheckOutcome.FAILED, tokens=1, cost=None, task=task)
            for task, before, after in outcomes]
    judgement = judge_all(runs)
    assert judgement is not None
    return judgement.loop


def _arms(outcomes) -> PairedRates:
    def run(arm: str, task: str, repeat: int, passed: bool) -> loop_value.Attempts:
        return loop_value.Attempts(index=0, group=arm, arm=arm, pairing="p", task=task, repeat=repeat, checked=(passed,),
                                   satisfied=(passed,), final_checked=passed, final_satisfied=passed, tokens=1, cost=None)

    repeats = [sum(t == task for t, _, _ in outcomes[:i]) for i, (task, _, _) in enumerate(outcomes)]
    rubric = [run("rubric", task, k, after) for (task, _, after), k in zip(outcomes, repeats)]
    control = [run("single", task, k, before) for (task, before, _), k in zip(outcomes, repeats)]
    return loop_value.compare(rubric, control, loop_value.CHECKS).paired


def _compare(outcomes) -> PairedRates:
    def case(task: str, repeat: int, passed: bool) -> Case:
        return Case(config="c", task=task, repeat=repeat, turn=1, status=Status.SATISFIED if passed else Status.FAILED,
                    verified=passed, tokens=1, cost=None)

    repeats = [sum(t == task for t, _, _ in outcomes[:i]) for i, (task, _, _) in enumerate(outcomes)]
    base = [case(task, k, before) for (task, before, _), k in zip(outcomes, repeats)]
    new = [case(task, k, after) for (task, _, after), k in zip(outcomes, repeats)]
    return compare(base, new, {"c": {}}, {"c": {}}).paired


@pytest.mark.parametrize("read", [_lift, _arms, _compare], ids=["lift", "loop arms", "compare"])
def test_each_paired_figure_is_the_one_engines(read):
    engine = PairedRates.of(OUTCOMES)
    assert read(OUTCOMES) == engine
    assert (engine.counts, engine.tasks, engine.repeated) == ((1, 1, 3, 1), 5, True)
    assert engine.difference == pytest.approx(2 / 6)
    assert (engine.test, engine.p) == (SIGN_TEST, sign_test([2, -1, 0, 0, 1])) and engine.p == mcnemar(2, 1)
    assert (engine.interval, engine.why) == (None, "no interval: 5 tasks, fewer than 10")
    single = [("t1", False, True), *OUTCOMES[2:]]  # every task once: independent pairs
    alone = PairedRates.of(single)
    assert read(single) == alone and not alone.repeated
    assert (alone.test, alone.p, alone.interval) == (MCNEMAR, mcnemar(2, 1), paired_difference(1, 1, 2, 1))


def test_the_engine_names_its_test_beside_its_p_and_says_what_it_counted():
    repeated, alone = PairedRates.of(OUTCOMES), PairedRates.of([("t1", False, True), *OUTCOMES[2:]])
    assert fmt_test(repeated) == "p = 1.0 (sign test on tasks)" and repeated.counted == "3 of 5 tasks moved"
    assert fmt_test(alone) == "p = 1.0 (exact McNemar)" and alone.counted == "3 discordant"
    assert fmt_difference(repeated) == "+33.3 pts (no interval: 5 tasks, fewer than 10)"
    assert fmt_difference(alone).startswith("+20.0 pts (95% CI ")
    assert (fmt_difference(PairedRates()), fmt_test(PairedRates()), PairedRates().p) == ("-", "-", None)


def test_the_lift_is_written_by_the_engines_formatters():
    runs = [Judged(status=Status.SATISFIED, verified_first=before, verified_final=after,
                   verified_outcome=CheckOutcome.PASSED if after else CheckOutcome.FAILED, tokens=1, cost=None, task=task)
            for task, before, after in OUTCOMES]
    judgement = judge_all(runs)
    assert judgement is not None
    assert fmt_lift(judgement) == f"{fmt_difference(judgement.loop)}, {fmt_test(judgement.loop)}; fixed 3, broken 1"
