"""Agreement arithmetic: Fleiss', Cohen's and Krippendorff's coefficients on published examples, the
majority vote, a grader's self-agreement, a panel, and a grader against people's labels."""

from __future__ import annotations

import math

import pytest

from rubric_runner.analysis.agreement import (
    PANEL,
    Label,
    Rating,
    against_checks,
    against_labels,
    cohen,
    fleiss,
    krippendorff_alpha,
    majority,
    panel,
    people_against_checks,
    self_agreement,
)

FLEISS_TABLE = [  # Fleiss (1971), as Wikipedia's worked example: 10 items, 14 raters, 5 categories, κ = 0.210
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_matches_the_worked_example():
    items = [[category for category, n in enumerate(row) for _ in range(n)] for row in FLEISS_TABLE]
    found = fleiss(items)
    assert (found.items, found.ratings, found.split) == (10, 140, 9)
    assert found.kappa.value == pytest.approx(0.20993, abs=1e-5)
    assert found.percent.value == pytest.approx(0.37802, abs=1e-5)
    low, high = found.kappa.interval
    assert low < found.kappa.value < high
    assert fleiss(items).kappa.interval == found.kappa.interval  # seeded: the same ratings, the same interval


def test_fleiss_is_undefined_when_every_rating_is_one_category_and_perfect_when_each_item_agrees():
    same = fleiss([[True, True, True]] * 4)
    assert same.kappa.value is None and same.percent.value == 1.0 and str(same.kappa) == "n/a"
    agreeing = fleiss([[True] * 3, [False] * 3, [True] * 3])
    assert agreeing.kappa.value == pytest.approx(1.0) and agreeing.split == 0
    assert fleiss([[True]]).items == 0  # one rating is nothing to agree with


def test_cohen_kappa_matches_the_worked_example():
    # Wikipedia's: 20 both yes, 5 A yes B no, 10 A no B yes, 15 both no -> p_o 0.7, p_e 0.5, κ 0.4
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    found = cohen(pairs)
    assert (found.items, found.agreed) == (50, 35)
    assert found.percent.value == pytest.approx(0.7) and found.kappa.value == pytest.approx(0.4)
    assert found.kappa.interval[0] < 0.4 < found.kappa.interval[1]


def test_krippendorff_alpha_matches_the_package_on_binary_data_with_missing_values():
    import krippendorff
    import numpy

    units = [[True, True, None], [False, False, False], [True, False, True], [True, True, True], [False, None, False],
             [True, True, False]]
    data = numpy.array([[math.nan if u[r] is None else float(u[r]) for u in units] for r in range(3)])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    found = krippendorff_alpha(units)
    assert found.value == pytest.approx(expected)
    assert (found.interval, found.why) == (None, "no interval: 6 transcripts, fewer than 10")  # too few to resample
    found = krippendorff_alpha(units * 2)
    assert found.interval[0] <= found.value <= found.interval[1]
    assert krippendorff_alpha([[True, True], [True, True]]).value is None  # no variation: undefined


def test_majority_gives_none_on_a_tie():
    assert majority([True, True, False]) is True
    assert majority([True, False]) is None
    assert majority([None, False, None]) is False
    assert majority([]) is None


C = "handles every input"


def _r(grader, item, verdict, passed=None, checked=None):
    criteria = ((C, passed if passed is not None else verdict),)
    return Rating(grader, item, verdict, criteria, checked, item)


def test_self_agreement_names_the_criterion_a_grader_changes_its_mind_on():
    steady = [_r("a", item, verdict) for item, verdict in [("t1", True), ("t2", False)] for _ in range(3)]
    wavering = [_r("b", "t1", v) for v in (True, False, True)] + [_r("b", "t2", v) for v in (False, True, False)]
    assert self_agreement(steady).unstable == [] and self_agreement(steady).verdict.kappa.value == pytest.approx(1.0)
    found = self_agreement(wavering)
    assert found.unstable == [C]
    assert found.verdict.split == 2
    # each item: 3 ratings, 2 agree -> P_i = 1/3; p = 1/2 each -> P_e = 1/2; κ = (1/3 - 1/2) / (1/2)
    assert found.verdict.kappa.value == pytest.approx(-1 / 3)


def test_self_agreement_with_nothing_graded_twice_is_undefined_and_counts_the_gradings_it_left_out():
    """Issue 44, case 7: repeat gradings that crashed read ``0 transcripts, 0 gradings``, ``0 of 0``, unstable
    criteria ``none`` and, for a criterion rated once a transcript, ``stable: yes``; the crashed gradings
    were dropped without a word. Undefined is n/a, and the gradings without a verdict are counted."""
    from rubric_runner.records import Status
    from rubric_runner.review.figures import agreement_lines

    crashed = Rating("g", "t2", None, status=Status.GRADER_ERROR)
    ratings = [_r("g", "t1", True), crashed, _r("g", "t1", True), Rating("g", "t2", True, (("only once", True),)),
               Rating("g", "t3", None, status=Status.GRADER_ERROR), Rating("g", "t3", None, status=Status.GRADER_ERROR)]
    found = self_agreement(ratings)
    assert (found.verdict.items, found.verdict.changed, found.dropped) == (1, "0 of 1", "3 (grader_error 3)")
    assert (found.stable(C), found.stable("only once"), found.unstable_text) == ("yes", "n/a", "none")
    nothing = self_agreement([crashed, crashed])
    assert (nothing.verdict.items, str(nothing.verdict.percent), str(nothing.verdict.kappa)) == (0, "n/a", "n/a")
    assert (nothing.verdict.changed, nothing.unstable_text, nothing.dropped) == ("n/a", "n/a", "2 (grader_error 2)")
    lines = agreement_lines([crashed, crashed], {})
    assert "| g | 0 | 0 | n/a | n/a | n/a | n/a | 2 (grader_error 2) |" in lines
    lines = agreement_lines(ratings, {})
    assert "| g | only once | n/a | n/a | n/a | n/a |" in lines


def test_a_panel_outvotes_a_lenient_grader_and_is_judged_against_the_checks():
    truth = {"t1": True, "t2": False, "t3": False}
    ratings = [_r("careful", t, ok, checked=ok) for t, ok in truth.items()]
    ratings += [_r("strict", t, ok, checked=ok) for t, ok in truth.items()]
    ratings += [_r("lenient", t, True, checked=ok) for t, ok in truth.items()]
    found = panel(ratings)
    assert found.graders == ["careful", "strict", "lenient"]
    assert [(v.item, v.verdict, v.grader) for v in found.votes] == [("t1", True, PANEL), ("t2", False, PANEL), ("t3", False, PANEL)]
    assert found.verdict.items == 3 and found.verdict.split == 2
    judged = against_checks(found.votes)
    assert (judged.false_satisfied.part, judged.false_rejection.part) == (0, 0)
    lenient = against_checks([r for r in ratings if r.grader == "lenient"])
    assert (lenient.false_satisfied.part, lenient.false_satisfied.whole) == (2, 2)
    assert panel([r for r in ratings if r.grader == "careful"]) is None


def test_a_grader_against_people_counts_false_satisfied_and_cohens_kappa():
    labels = {"t1": Label(True, {C: True}), "t2": Label(False, {C: False}), "t3": Label(False), "t4": Label(None)}
    ratings = [_r("g", "t1", True), _r("g", "t2", True), _r("g", "t3", False), _r("g", "t4", True), _r("g", "t5", True)]
    found = against_labels(ratings, labels)
    assert found.verdict.items == 3 and found.verdict.agreed == 2
    assert (found.judgement.false_satisfied.part, found.judgement.false_satisfied.whole) == (1, 2)
    assert (found.judgement.false_rejection.part, found.judgement.false_rejection.whole) == (0, 1)
    # p_o 2/3; grader yes 2/3, people yes 1/3 -> p_e = 2/9 + 2/9 = 4/9; κ = (2/3 - 4/9) / (5/9) = 0.4
    assert found.verdict.kappa.value == pytest.approx(0.4)
    assert found.criteria[C].items == 2 and found.criteria[C].agreed == 1
    people = people_against_checks(labels, {"t1": True, "t2": True, "t3": False})
    assert (people.false_rejection.part, people.false_rejection.whole) == (1, 2)
