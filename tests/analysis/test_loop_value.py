"""Does the loop help: the arms' figures, the paired comparisons, the curve and the broken revisions,
against figures worked out by hand below."""

from __future__ import annotations

import pytest

from rubric_runner.analysis import loop_value
from rubric_runner.analysis.intervals import mcnemar, paired_difference
from rubric_runner.analysis.loop_value import CHECKS, VERDICTS, Attempts

T, F = True, False


def attempts(group: str, task: str, checked: tuple, spent: tuple = (), repeat: int = 0, satisfied: tuple = (),
             final_satisfied: bool = False, tokens: int = 100, cost: float | None = 0.01) -> Attempts:
    """A run of ``group`` (its arm: the group's name) whose final answer is its last attempt's."""
    return Attempts(index=0, group=group, arm=group, pairing="p", task=("code", task), repeat=repeat, checked=checked,
                    satisfied=satisfied or (F,) * len(checked), final_checked=checked[-1] if checked else None,
                    final_satisfied=final_satisfied, tokens=tokens, cost=cost, spent=spent)


def c(*pairs: tuple[int, float]) -> tuple:
    return pairs


# five tasks, three arms; each tuple: the hidden checks of each attempt
RUNS = [
    attempts("rubric", "t1", (F, T), c((100, .1), (300, .3))),
    attempts("rubric", "t2", (T,), c((100, .1))),
    attempts("rubric", "t3", (T, F), c((100, .1), (250, .25))),  # a revision broke it
    attempts("rubric", "t4", (F, F, F), c((100, .1), (200, .2), (330, .33))),
    attempts("rubric", "t5", (F, T), c((100, .1), (220, .22))),
    attempts("single", "t1", (F,)), attempts("single", "t2", (T,)), attempts("single", "t3", (T,)),
    attempts("single", "t4", (F,)), attempts("single", "t5", (F,)),
    attempts("resample", "t1", (F, F, F)), attempts("resample", "t2", (T,)), attempts("resample", "t3", (T,)),
    attempts("resample", "t4", (F, F, F)), attempts("resample", "t5", (F, F, T)),
]


def test_basis_is_the_checks_when_any_final_answer_was_checked():
    assert loop_value.basis(RUNS) == CHECKS
    unchecked = [attempts("rubric", "t1", (None, None)), attempts("single", "t1", (None,))]
    assert loop_value.basis(unchecked) == VERDICTS


def test_arms_count_final_passes_and_spend_per_success():
    found = {arm.arm: arm for arm in loop_value.arms(RUNS, CHECKS)}
    # rubric: t1, t2, t5 pass of 5; 5 runs x 100 tokens over 3 successes; 5 x 0.01 USD over 3
    assert (found["rubric"].passed, found["rubric"].decided, found["rubric"].runs) == (3, 5, 5)
    assert found["rubric"].tokens_per_success == pytest.approx(500 / 3)
    assert found["rubric"].cost_per_success == pytest.approx(0.05 / 3)
    # single: t2, t3; resample: t2, t3, t5
    assert (found["single"].passed, found["single"].tokens_per_success) == (2, 250)
    assert found["resample"].passed == 3


def test_an_arm_with_an_unpriced_run_has_no_cost_per_success():
    runs = [attempts("rubric", "t1", (T,), cost=None), attempts("rubric", "t2", (T,))]
    (arm,) = loop_value.arms(runs, CHECKS)
    assert arm.tokens_per_success == 100 and arm.cost_per_success is None


def test_the_rubric_loop_against_each_control_is_paired_on_task_and_repeat():
    found = {c.control: c for c in loop_value.comparisons(RUNS, CHECKS)}
    assert set(found) == {"single", "resample"}
    single = found["single"]
    # t1 rubric only, t2 both, t3 single only, t4 neither, t5 rubric only
    assert (single.paired.both, single.paired.gained, single.paired.lost, single.paired.neither) == (1, 2, 1, 1)
    assert single.paired.difference == pytest.approx(0.2)  # (2 - 1) / 5
    assert single.paired.p == 1.0  # 2 x P(X <= 1 | n = 3) = 2 x 4/8, at most 1
    assert not single.paired.repeated and single.paired.interval == paired_difference(1, 1, 2, 1)
    resample = found["resample"]
    # t1 rubric only, t2 both, t3 resample only, t4 neither, t5 both
    assert (resample.paired.both, resample.paired.gained, resample.paired.lost, resample.paired.neither) == (2, 1, 1, 1)
    assert resample.paired.difference == 0


def test_mcnemar_and_the_interval_take_the_rubric_loop_as_after():
    rubric = [attempts("rubric", f"t{i}", (F, T)) for i in range(6)]
    control = [attempts("single", f"t{i}", (F,)) for i in range(6)]
    found = loop_value.compare(rubric, control, CHECKS)
    assert (found.paired.both, found.paired.gained, found.paired.lost, found.paired.neither) == (0, 6, 0, 0)
    assert found.paired.difference == 1.0
    assert found.paired.p == pytest.approx(2 / 64)  # 2 x P(X = 0 | n = 6)
    low, high = found.paired.interval
    assert 0 < low < high == 1.0  # the rubric loop better: the interval above 0


def test_repeated_tasks_get_the_task_clustered_interval():
    rubric = [attempts("rubric", t, (T,), repeat=r) for t in ("t1", "t2") for r in (0, 1)]
    control = [attempts("single", t, (F,), repeat=r) for t in ("t1", "t2") for r in (0, 1)]
    found = loop_value.compare(rubric, control, CHECKS)
    assert found.paired.cases == 4 and found.paired.tasks == 2
    # two tasks resampled give a zero-width interval at +100 points: none, and why
    assert (found.paired.interval, found.paired.why) == (None, "no interval: 2 tasks, fewer than 10")
    assert found.paired.p == 0.5 and mcnemar(4, 0) == 0.125  # two tasks moved (2 x (1/2)^2), not four pairs
    rubric = [attempts("rubric", f"t{i}", (T if i % 3 else F,), repeat=r) for i in range(12) for r in (0, 1)]
    control = [attempts("single", f"t{i}", (F,), repeat=r) for i in range(12) for r in (0, 1)]
    found = loop_value.compare(rubric, control, CHECKS)
    assert found.paired.tasks == 12 and found.paired.difference == pytest.approx(16 / 24)
    low, high = found.paired.interval  # twelve tasks, not all alike: the bootstrap's
    assert low < found.paired.difference < high and found.paired.why == ""


def test_pairs_need_both_outcomes_known():
    rubric = [attempts("rubric", "t1", (T,)), attempts("rubric", "t2", (None,)), attempts("rubric", "t3", (F,))]
    control = [attempts("single", "t1", (F,)), attempts("single", "t2", (T,))]
    found = loop_value.compare(rubric, control, CHECKS)
    assert (found.paired.cases, found.paired.gained) == (1, 1)  # t2 unverifiable, t3 has no control run


def test_the_curve_keeps_a_finished_runs_final_answer_and_costs_each_pass():
    rubric = loop_value.curve(RUNS, CHECKS)["rubric"]
    # after pass 1: t2, t3 pass; after 2: t1, t2, t5 (t3 broke); after 3: the same (only t4 took it)
    assert [(p.k, p.passed, p.known, p.took) for p in rubric] == [(1, 2, 5, 5), (2, 3, 5, 4), (3, 3, 5, 1)]
    assert [p.gained for p in rubric] == [None, 1, 0]  # pass 2: t1 and t5 fixed, t3 broken
    # pass 2's tokens: t1 300-100, t3 250-100, t4 200-100, t5 220-100
    assert rubric[1].tokens == 570 and rubric[1].cost == pytest.approx(0.57)
    assert rubric[1].tokens_per_gain == 570
    assert (rubric[2].tokens, rubric[2].tokens_per_gain) == (130, None)  # t4 330-200; no gain
    resample = loop_value.curve(RUNS, CHECKS)["resample"]
    assert [(p.passed, p.gained, p.took) for p in resample] == [(2, None, 5), (2, 0, 3), (3, 1, 3)]
    assert resample[1].tokens is None  # its records do not say what each pass spent
    assert [p.passed for p in loop_value.curve(RUNS, CHECKS)["single"]] == [2]


def test_the_curve_on_verdicts():
    runs = [attempts("rubric", "t1", (None, None), satisfied=(F, T), final_satisfied=True),
            attempts("rubric", "t2", (None,), satisfied=(T,), final_satisfied=True),
            attempts("rubric", "t3", (None, None), satisfied=(F, F), final_satisfied=False)]
    assert [(p.passed, p.known) for p in loop_value.curve(runs, VERDICTS)["rubric"]] == [(1, 3), (2, 3)]


def test_broken_revisions_are_flagged_at_the_attempt_that_failed():
    runs = [*RUNS, attempts("rubric", "t6", (T, None, F)), attempts("rubric", "t7", (F, T, T))]
    found = [(b.run.task[1], b.at) for b in loop_value.broken(runs)]
    assert found == [("t3", 2), ("t6", 3)]  # an unchecked attempt between is passed over


def test_a_criterion_that_passed_then_failed_is_flagged_once():
    passes = (((("tests", False), ("style", True))), (("tests", True), ("style", False)), (("tests", False), ("style", False)))
    run = Attempts(index=4, group="rubric", arm="rubric", pairing="p", task=("code", "t1"), repeat=0, checked=(F, T, F),
                   satisfied=(F, F, F), final_checked=F, final_satisfied=False, tokens=1, cost=None, criteria=passes)
    found = [(f.run.index, f.criterion, f.passed_at, f.failed_at) for f in loop_value.flipped([run])]
    assert found == [(4, "style", 1, 2), (4, "tests", 2, 3)]
