"""Judge error and loop lift: the grader's verdicts against hidden verification, with exact figures,
intervals and tests a reviewer would accept."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from support.browser import Page, browse
from support.helpers import md_table, run_cli, verdict, write_script
from support.judged import judge, judged

import rubric_runner
from rubric_runner.analysis import intervals
from rubric_runner.analysis.judge import (
    ONE_PASS,
    RANK_RULE,
    SUMMARY_FIELDS,
    Rate,
    judge_groups,
    ranking,
)
from rubric_runner.analysis.numbers import fmt_num, fmt_pct, rounded
from rubric_runner.cli import run_command
from rubric_runner.paths import DATA_DIR
from rubric_runner.records import (
    CheckOutcome,
    GraderInfo,
    ModelInfo,
    RunHeader,
    Status,
    TaskRecord,
    Usage,
    Verification,
    Verifications,
    load_record,
    load_task,
)
from rubric_runner.records.passk import pass_all, pass_at, pass_k
from rubric_runner.report import load_prices
from rubric_runner.report.columns import RUN_COLUMNS

PRICES = {"w:model": {"input": 1.0, "output": 2.0}, "g:model": {"input": 10.0, "output": 20.0}}
OUTCOME = {True: CheckOutcome.PASSED, False: CheckOutcome.FAILED, None: CheckOutcome.UNVERIFIABLE}


def _check(passed: bool | None) -> Verification:
    return Verification(outcome=OUTCOME[passed], passed=passed)


def header(grader: str = "g:model", overrides: list[str] | None = None) -> RunHeader:
    """Who ran a task: a worker, a grader, and for a regrade the overrides it put on the graded run."""
    return RunHeader(worker=ModelInfo(model="w:model"), grader=GraderInfo(model=grader),
                     regraded_from="/runs/x" if overrides else None, regraded_with=overrides)


def record(status: str, first: bool | None, final: bool | None, grader: str = "g:model", tokens: int = 100,
           overrides: list[str] | None = None, task: str | None = None, transcript: str | None = None,
           ) -> tuple[RunHeader, TaskRecord]:
    """A task ending ``status`` whose first and final answers verified ``first`` and ``final``
    (None: unverifiable); ``tokens`` billed by each of worker and grader, half input, half output; ``task``
    names it (runs of one task are repeats), ``transcript`` the transcript judged."""
    usage = {role: Usage(calls=1, input_tokens=tokens // 2, output_tokens=tokens // 2, total_tokens=tokens)
             for role in ("worker", "grader")}
    return header(grader, overrides), TaskRecord(status=Status(status), usage=usage, task_id=task, run_dir=transcript,
                                                 verification=Verifications(first=_check(first), final=_check(final)))


def unverified(status: str = "error") -> tuple[RunHeader, TaskRecord]:
    """A task that ended before its answers could be checked (no verification at all)."""
    return header(), TaskRecord(status=Status(status), usage={"worker": Usage(total_tokens=60, input_tokens=30, output_tokens=30)})


# the scripted HumanEval demo, plus a run whose final answer could not be checked and one that errored
DEMO = [
    record("satisfied", True, True),                # right at once, accepted
    record("satisfied", False, True),               # fixed by the loop
    record("failed", True, True),                   # right, rejected: a false rejection
    record("satisfied", False, False),              # wrong, accepted: a false satisfied
    record("failed", False, False),                 # wrong, rejected
    record("max_iterations_reached", None, None),   # the sandbox refused: unverifiable
    unverified(),
]


def test_wilson_interval_matches_the_published_values():
    assert intervals.wilson(5, 10) == pytest.approx((0.236593, 0.763407), abs=1e-6)
    assert intervals.wilson(0, 10) == pytest.approx((0.0, 0.277533), abs=1e-6)
    assert intervals.wilson(10, 10) == pytest.approx((0.722467, 1.0), abs=1e-6)
    assert Rate(1, 4).interval == pytest.approx((0.045587, 0.699358), abs=1e-6)
    assert (Rate(0, 0).value, Rate(0, 0).interval, str(Rate(0, 0))) == (None, None, "-")
    assert str(Rate(1, 4)) == "1/4 (25.0%, 95% CI 4.6-69.9%)"


def test_confusion_matrix_counts_unverifiable_runs_apart():
    j = judge(DEMO, PRICES)
    cells = (j.satisfied_passed, j.satisfied_failed, j.rejected_passed, j.rejected_failed)
    assert (j.runs, cells, j.unverifiable, j.outside) == (6, (2, 1, 1, 1), 1, {})
    assert (j.false_satisfied.part, j.false_satisfied.whole) == (1, 2)   # of the two failing answers, one accepted
    assert (j.false_rejection.part, j.false_rejection.whole) == (1, 3)   # of the three passing answers, one rejected
    assert str(j.false_satisfied) == "1/2 (50.0%, 95% CI 9.5-90.5%)"
    assert j.balanced_error.value == pytest.approx((1 / 2 + 1 / 3) / 2)


def test_grader_crashes_and_unsupported_verdicts_are_outside_the_matrix():
    """Finding 6: 2 of 3 "rejected & passed" were grader_errors, which made false rejection 50% instead of 25%."""
    runs = [record("satisfied", True, True) for _ in range(3)] + [
        record("failed", True, True), record("grader_error", True, True), record("grader_error", True, True),
        record("unsupported", False, True), record("limit_exceeded", False, False), record("failed", False, False)]
    j = judge(runs, PRICES)
    assert (j.satisfied_passed, j.rejected_passed, j.rejected_failed) == (3, 1, 1)
    assert j.outside == {"grader_error": 2, "limit_exceeded": 1, "unsupported": 1}
    assert str(j.false_rejection).startswith("1/4 (25.0%")
    assert (j.final.part, j.final.whole) == (7, 9)  # their answers were checked: the pass rate counts them


def test_unverifiable_answers_are_in_no_pass_rate():
    """Finding 7: with every answer unverifiable the report claimed final pass 0/5 and lift +0.0."""
    j = judge([record("satisfied", None, None) for _ in range(5)], PRICES)
    assert (j.unverifiable, j.final.whole, str(j.final), str(j.first)) == (5, 0, "-", "-")
    assert (j.lift.value, j.lift_p, str(j.lift), j.pass_k) == (None, None, "-", None)
    mixed = judge([record("satisfied", False, True), record("failed", None, None), record("failed", True, None)], PRICES)
    assert (mixed.first.part, mixed.first.whole, mixed.final.part, mixed.final.whole) == (1, 2, 1, 1)
    assert (mixed.fixed, mixed.broken, mixed.lift.value) == (1, 0, 1.0)  # over the one run whose two answers were checked


def test_the_loops_lift_from_first_to_final_verification_with_its_test():
    """Finding 8: the lift is paired: an exact McNemar p and Newcombe's paired interval."""
    j = judge(DEMO, PRICES)
    # unverifiable answers are in no denominator
    assert (j.first.part, j.first.whole, j.final.part, j.final.whole) == (2, 5, 3, 5)
    assert (j.lift.value, j.fixed, j.broken, j.lift_p) == (pytest.approx(0.2), 1, 0, 1.0)
    low, high = j.lift.interval
    assert low < 0 < high and high > j.lift.value  # fixed 1, broken 0 of 5: nothing settled
    assert intervals.mcnemar(10, 2) == pytest.approx(0.038574, abs=1e-6)  # R: mcnemar.exact, 10 vs 2 discordant pairs
    assert intervals.mcnemar(0, 0) == 1.0
    # Newcombe's 1998 worked example (Altman et al., Statistics with Confidence, table 6.2): 14, 5, 0, 22
    assert intervals.paired_difference(14, 5, 0, 22) == pytest.approx((-0.2265, -0.0115), abs=1e-4)
    worse = judge([record("failed", True, False), record("satisfied", True, True)], PRICES)
    assert (worse.lift.value, worse.fixed, worse.broken) == (-0.5, 0, 1)


def test_tokens_and_cost_per_verified_success():
    j = judge(DEMO, PRICES)
    # six verified runs x 200 tokens, and the errored run's 60: every run's spend, over three verified successes
    assert j.tokens == 6 * 200 + 60
    assert j.tokens_per_success == pytest.approx(1260 / 3)
    per_run = (50 * 1 + 50 * 2 + 50 * 10 + 50 * 20) / 1e6
    assert j.cost == pytest.approx(6 * per_run + (30 * 1 + 30 * 2) / 1e6)
    assert j.cost_per_success == pytest.approx(j.cost / 3)
    assert judge(DEMO, {}).cost is None and judge(DEMO, {}).cost_per_success is None
    nothing = judge([record("failed", False, False)], PRICES)
    assert (nothing.tokens_per_success, nothing.cost_per_success, nothing.lift.value) == (None, None, 0.0)


def test_no_judgement_without_verification():
    assert judge([unverified("satisfied"), unverified()], PRICES) is None
    assert judge([], PRICES) is None


def test_false_discovery_rate_sits_beside_the_false_satisfied_rate():
    """Finding 8: the share of ``satisfied`` verdicts that are wrong, FP / (FP + TP)."""
    j = judge(DEMO, PRICES)
    assert (j.false_discovery.part, j.false_discovery.whole) == (1, 3)


def test_repeated_tasks_get_intervals_resampled_by_task():
    """Finding 8: false satisfied 7/8 came from 3 tasks; its interval counts each task once (too few tasks
    to resample); from 12 tasks, the interval resamples the tasks, seeded."""
    runs = [record("satisfied", False, False, task="a") for _ in range(3)]
    runs += [record("satisfied", False, False, task="b") for _ in range(3)]
    runs += [record("satisfied", False, False, task="c"), record("failed", False, False, task="c")]
    runs += [record("satisfied", True, True, task=t) for t in ("a", "b", "d")]
    j = judge(runs, PRICES)
    assert j.repeated and j.tasks == 4
    rate = j.false_satisfied
    assert (rate.part, rate.whole, rate.tasks) == (7, 8, 3)  # the failing answers came from tasks a, b and c
    assert str(rate) == f"7/8 (87.5%, 95% CI {fmt_pct(rate.interval[0])[:-1]}-{fmt_pct(rate.interval[1])}, 3 tasks)"
    effective = 8 ** 2 / (3 ** 2 + 3 ** 2 + 2 ** 2)  # tasks of 3, 3 and 2 runs: about 2.9 tasks' worth
    assert rate.interval == pytest.approx(intervals.wilson(7 / 8 * effective, effective))
    assert rate.interval[0] < intervals.wilson(7, 8)[0]  # wider than eight independent runs would give
    tasks = [f"t{i}" for i in range(12)]
    many = [record("satisfied" if i % 3 else "failed", False, False, task=t) for t in tasks for i in range(3)]
    many += [record("satisfied", False, False, task=t) for t in tasks[:4]]
    j = judge(many, PRICES)
    rate = j.false_satisfied
    assert (rate.part, rate.whole, rate.tasks) == (28, 40, 12)
    assert rate.interval != intervals.task_wilson(28, 40, [4] * 4 + [3] * 8) and rate.interval[0] < 0.7 < rate.interval[1]
    assert judge(many, PRICES).false_satisfied.interval == rate.interval  # the same records, the same interval
    once = judge([record("satisfied", False, False, task=t) for t in "abcdefg"] + [record("failed", False, False, task="h")], PRICES)
    assert not once.repeated and once.false_satisfied.interval == intervals.wilson(7, 8)


def test_corrected_pass_rate_is_rogan_gladen():
    """Finding 8: the grader's satisfied rate over every run with a verdict, corrected for its measured
    sensitivity and specificity; with every run verified it is the verified pass rate itself."""
    j = judge(DEMO[:5], PRICES)
    assert j.corrected_pass.value == pytest.approx(j.final.value)
    # its interval is the bootstrap's, which five runs are too few for
    assert (j.corrected_pass.interval, str(j.corrected_pass)) == (None, "60.0% (no interval: 5 tasks, fewer than 10)")
    twice = judge(DEMO[:5] * 2, PRICES)
    low, high = twice.corrected_pass.interval
    assert low <= twice.final.value <= high
    # 10 more runs graded but not checked, 5 of them satisfied: 8 of 15 verdicts satisfied
    more = DEMO[:5] + [(header(), TaskRecord(status=Status.SATISFIED if i < 5 else Status.FAILED)) for i in range(10)]
    sensitivity, specificity = 2 / 3, 1 / 2
    assert judge(more, PRICES).corrected_pass.value == pytest.approx((8 / 15 + specificity - 1) / (sensitivity + specificity - 1))
    assert judge(more, PRICES).corrected_pass.value == pytest.approx(0.2)
    assert intervals.rogan_gladen(0.9, sensitivity, specificity) == 1.0  # kept to 0..1
    assert intervals.rogan_gladen(0.5, 0.5, 0.5) is None  # a grader no better than a coin corrects nothing


def test_balanced_error_does_not_move_with_the_share_of_passing_answers():
    """Finding 5: an accept-all grader's error was 40% on one set of transcripts and 50% on another."""
    for passing, failing in ((3, 2), (5, 5)):
        j = judge([record("satisfied", True, True)] * passing + [record("satisfied", False, False)] * failing, PRICES)
        assert (j.false_satisfied.value, j.false_rejection.value, j.balanced_error.value) == (1.0, 0.0, 0.5)
    assert "error_rate" not in SUMMARY_FIELDS and "balanced_error" in SUMMARY_FIELDS


def test_pass_at_k_is_the_unbiased_estimator():
    """Finding 4: pass@k = 1 - C(n-c, k) / C(n, k), pass^k = C(c, k) / C(n, k), for k = 1 and the fewest runs."""
    assert (pass_at(5, 2, 2), pass_all(5, 2, 2)) == (pytest.approx(0.7), pytest.approx(0.1))
    assert (pass_at(3, 0, 3), pass_at(3, 1, 1), pass_all(3, 3, 3)) == (0.0, pytest.approx(1 / 3), 1.0)
    figures = pass_k([(2, 1), (4, 4), (3, 0)])  # 2 to 4 runs per task: k is 2, for every task
    assert figures.k == 2 and figures.tasks == 3
    assert figures.at_1 == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert figures.at_k == pytest.approx((1 + 1 + 0) / 3)
    assert figures.all_k == pytest.approx((0 + 1 + 0) / 3)


def _ranked(records):
    return [(rank, key[1], (j.false_satisfied.part, j.false_rejection.part))
            for rank, key, j in ranking(judge_groups(records, lambda task: (task[0].grader.model, task[0].regraded_with[0]), PRICES, judged))]


def test_graders_rank_by_balanced_error_only_on_the_same_transcripts():
    """Findings 5 and 10: a base-rate-free key, only among graders of the same transcripts, ties sharing a rank."""
    truth = [(True, True), (False, True), (True, True), (False, False), (False, False)]  # (first, final) passed

    def graded(script: str, verdicts: str, transcripts: str = "t") -> list[tuple[RunHeader, TaskRecord]]:
        return [record("satisfied" if v == "S" else "failed", first, final, overrides=[f"grader.script={script}"],
                       transcript=f"/runs/{transcripts}{i}") for i, (v, (first, final)) in enumerate(zip(verdicts, truth))]

    records = [*graded("lenient.yaml", "SSSSS"), *graded("strict.yaml", "FFFFF"), *graded("right.yaml", "SSSFF"),
               *graded("picky.yaml", "FFSFF")]
    assert _ranked(records) == [
        (1, "grader.script=right.yaml", (0, 0)),
        (2, "grader.script=picky.yaml", (0, 2)),     # balanced error (0 + 2/3) / 2
        (3, "grader.script=strict.yaml", (0, 3)),    # (0 + 1) / 2, as lenient's: a tie, one rank
        (3, "grader.script=lenient.yaml", (2, 0)),   # the tie listed after the lower false-satisfied rate
    ]
    others = graded("elsewhere.yaml", "SSSFF", transcripts="u")  # right's verdicts, on other transcripts
    assert _ranked([*graded("right.yaml", "SSSFF"), *others]) == [
        (None, "grader.script=elsewhere.yaml", (0, 0)), (None, "grader.script=right.yaml", (0, 0))]


def test_one_number_formatter_rounds_half_up_everywhere():
    """Finding 10: summaries kept binary noise while the reports rounded half to even."""
    assert rounded(0.012936999999999999) == 0.012937 and rounded(0.1 + 0.2) == 0.3
    assert (fmt_num(0.125), fmt_num(2.675), fmt_pct(0.0005), fmt_num(1234.5, 0)) == ("0.13", "2.68", "0.1%", "1,235")
    assert fmt_pct(-0.00001) == "0.0%"


# --- from real runs: the scripted HumanEval demo, judged, then regraded by several graders ---

JUDGES = DATA_DIR / "scripts" / "judges"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The offline HumanEval demo over its first five problems (hidden verification in the sandbox)."""
    root = tmp_path_factory.mktemp("humaneval")
    record = rubric_runner.run(["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]",
                                "run.console=false"], root / "run")
    assert record.exit_code == 1  # two tasks end failed
    return root / "run"


def test_a_lenient_verdict_is_a_false_satisfied_and_the_loop_lifts_the_pass_rate(demo):
    run = load_record(demo)
    records = [(run.header, load_task(path)) for path in sorted((demo / "tasks").iterdir())]
    j = judge(records, load_prices())
    # HumanEval-3: its examples pass, HumanEval's check() does not, and the scripted grader is satisfied
    cells = (j.satisfied_passed, j.satisfied_failed, j.rejected_passed, j.rejected_failed)
    assert (j.runs, cells, j.unverifiable) == (5, (2, 1, 1, 1), 0)
    assert (j.false_satisfied.part, j.false_satisfied.whole, j.false_rejection.part, j.false_rejection.whole) == (1, 2, 1, 3)
    # HumanEval-1 fails at first and passes after the grader's revision request
    assert (j.first.part, j.final.part, j.fixed, j.broken) == (2, 3, 1, 0)
    assert (j.lift.value, j.lift_p) == (pytest.approx(0.2), 1.0)  # +20 points on one fixed run: no evidence of a lift
    assert j.tokens == sum(r.usage[role].total_tokens for _, r in records for role in ("worker", "grader")) > 0
    assert j.tokens_per_success == pytest.approx(j.tokens / 3) and j.cost is None  # scripted models have no price


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def test_regrade_with_several_graders_ranks_them_on_the_same_transcripts(demo, tmp_path):
    run_dir = _copy(demo, tmp_path)
    scripts = ",".join(str(JUDGES / f"{name}.yaml") for name in ("lenient", "strict", "careful"))
    proc = run_cli("regrade", str(run_dir), "-m", f"grader.script={scripts}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the strict grader's verdicts are not satisfied
    ranking = proc.stdout[proc.stdout.index("graders ranked"):].splitlines()[1:4]
    # lenient and strict make as many mistakes of the two kinds: one rank, the lower false-satisfied rate first
    assert [(line.split(".")[0].strip(), line.split(": balanced error ")[0].rsplit("/", 1)[1]) for line in ranking] == [
        ("1", "careful.yaml"), ("2", "strict.yaml"), ("2", "lenient.yaml")]
    assert "balanced error 0.0% (95% CI 0.0-43.2%); false satisfied 0/2 (0.0%, 95% CI 0.0-65.8%)" in ranking[0]
    assert "balanced error 50.0% (95% CI 21.9-82.9%); false satisfied 0/2 (0.0%, 95% CI 0.0-65.8%); false rejection 3/3" in ranking[1]
    assert "false satisfied 2/2 (100.0%, 95% CI 34.2-100.0%); false rejection 0/3" in ranking[2]
    (out_dir,) = (run_dir / "regrades").iterdir()
    originals = {path.name: load_task(path) for path in (run_dir / "tasks").iterdir()}
    for index, name in enumerate(("lenient", "strict", "careful")):
        assert load_record(out_dir / str(index)).header.regraded_with == [f"grader.script={JUDGES / name}.yaml"]
        regraded = [load_task(path) for path in sorted((out_dir / str(index) / "tasks").iterdir())]
        # the same answers, verified once by the original run: the regrade re-ran no check
        assert all(r.verification == originals[Path(r.run_dir).name].verification for r in regraded)
    assert {"report.md", "report.html", "summary.jsonl"} <= {path.name for path in out_dir.iterdir()}
    # the reports of the regrade rank the graders as the command did, each rate with its count and interval
    text = (out_dir / "report.md").read_text()
    assert RANK_RULE in text
    graders = md_table(text, "### Graders ranked")
    assert [(g["rank"], g["grader"].rsplit("/", 1)[1], g["transcripts"], g["false satisfied"], g["false rejection"])
            for g in graders] == [
        ("1", "careful.yaml", "A: 5", "0/2 (0.0%, 95% CI 0.0-65.8%)", "0/3 (0.0%, 95% CI 0.0-56.1%)"),
        ("2", "strict.yaml", "A: 5", "0/2 (0.0%, 95% CI 0.0-65.8%)", "3/3 (100.0%, 95% CI 43.9-100.0%)"),
        ("2", "lenient.yaml", "A: 5", "2/2 (100.0%, 95% CI 34.2-100.0%)", "0/3 (0.0%, 95% CI 0.0-56.1%)"),
    ]
    # finding 1: a regrade's graders stay apart in every table
    groups = md_table(text, "## By configuration")
    assert [g["configuration"].rsplit("/", 1)[1] for g in groups] == ["lenient.yaml", "strict.yaml", "careful.yaml"]
    assert [g["satisfied"] for g in groups] == ["5/5 (100.0%)", "0/5 (0.0%)", "3/5 (60.0%)"]
    judges = md_table(text, "## Graders against hidden verification")
    assert [(j["configuration"].rsplit("/", 1)[1], j["satisfied & failed"], j["rejected & passed"]) for j in judges] == [
        ("lenient.yaml", "2", "0"), ("strict.yaml", "0", "3"), ("careful.yaml", "0", "0")]
    matrix = md_table(text, "## Tasks x configurations")
    assert [[k.rsplit("/", 1)[-1] for k in row] for row in matrix[:1]] == [
        ["rubric", "task", "lenient.yaml", "strict.yaml", "careful.yaml", "missed by"]]
    assert [(row["task"], *(row[k] for k in list(row)[2:5])) for row in matrix][3] == ("HumanEval-3", "1/1", "0/1", "0/1")
    runs = md_table(text, "## Runs")
    assert len({r["configuration"] for r in runs}) == 3 and len(runs) == 15
    # measured on the same answers, every grader shows the original run's lift; a verified success costs the
    # transcript's worker too, not only the grader that regraded it
    answers = md_table(text, "### Answers against hidden verification")
    assert {(a["first answer passed"], a["final answer passed"], a["lift"]) for a in answers} == {
        ("2/5 (40.0%, 95% CI 11.8-76.9%)", "3/5 (60.0%, 95% CI 23.1-88.2%)", LIFT)}
    worker = sum(task.usage["worker"].total_tokens for task in originals.values())
    for answer, index in zip(answers, range(3)):
        grader = sum(load_task(path).usage["grader"].total_tokens for path in (out_dir / str(index) / "tasks").iterdir())
        assert answer["tokens/verified success"] == fmt_num((worker + grader) / 3, 0)
    shown = _html_table(out_dir, "graders?sort=false+satisfied&order=descending", tmp_path / "p", "graders", list(graders[0]))
    assert [(g["rank"], g["grader"].rsplit("/", 1)[1]) for g in shown] == [("2", "lenient.yaml"), ("1", "careful.yaml"),
                                                                            ("2", "strict.yaml")]


def test_a_sweep_dir_is_regraded_job_by_job_and_its_regrades_are_not_its_runs(tmp_path, capsys):
    # each transcript is its own thread: a scripted grader replays its script from the top for each;
    # a satisfied verdict runs the suite first, as rubric=code's criteria ask
    run_suite = {"tool_calls": [{"name": "run_test_suite", "args": {"code": "def find_duplicates(lst):\n    return []\n"}}]}
    # as many criteria as the runs' frozen checklist (rubric=code's two lines), which a regrade grades again
    ok = write_script(tmp_path / "ok.yaml", worker=[], grader=[run_suite, verdict("satisfied", ("c", True), ("d", True))])
    revise = write_script(tmp_path / "revise.yaml", worker=[], grader=[verdict("needs_revision", ("c", False), ("d", True))])
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", "worker=scripted", "grader=scripted", "rubric=code", "grader.max_iterations=3,4",
                   "run.console=false", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("regrade", str(sweep_dir), "-m", f"grader.script={revise},{ok}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (out_dir,) = (sweep_dir / "regrades").iterdir()
    records = {path.relative_to(out_dir).parent.as_posix(): load_record(path.parent) for path in out_dir.glob("*/*/result.json")}
    assert {key: record.status for key, record in records.items()} == {
        "0/0": "max_iterations_reached", "0/1": "max_iterations_reached", "1/0": "satisfied", "1/1": "satisfied"}
    assert records["1/1"].header.regraded_from == str(sweep_dir / "1")
    # every final answer passed the hidden suite: with no failing answer there is no false-satisfied rate,
    # no balanced error, and no rank
    ranking = proc.stdout[proc.stdout.index("graders ranked"):].splitlines()[1:]
    lines = {line.split(": balanced error ")[0]: line for line in ranking[:2]}
    assert sorted(lines) == sorted([f"  -. grader.script={revise}", f"  -. grader.script={ok}"])
    assert "false satisfied -; false rejection 2/2 (100.0%" in lines[f"  -. grader.script={revise}"]
    assert "false satisfied -; false rejection 0/2 (0.0%" in lines[f"  -. grader.script={ok}"]
    capsys.readouterr()
    assert run_command(["report", str(sweep_dir)]) == 0
    assert "report: 2 runs: 2 satisfied" in capsys.readouterr().out


# --- the judgement in the summary files and in both reports ---

LENIENT_1_OF_2 = "1/2 (50.0%, 95% CI 9.5-90.5%)"
"""The demo's false-satisfied rate: of the two final answers that fail check(), the grader accepted one."""
LIFT = "+20.0 pts (95% CI -25.2 to 54.6), p = 1.0 (exact McNemar); fixed 1, broken 0"
"""The demo's lift: one run fixed, none broken, of five; Newcombe's paired interval and McNemar's exact p."""


def _html_table(root: Path, view: str, profile: Path, table: str, headers: list[str]) -> list[dict[str, str]]:
    """A table of ``report.html#view`` as headless chromium leaves it, a dict per row."""
    page = Page(browse(f"{(root / 'report.html').as_uri()}#{view}", profile, "--dump-dom"))
    return [dict(zip(headers, row, strict=True)) for row in page.tables[table]]


def test_summaries_count_the_false_satisfied_and_the_lift(demo):
    [row] = [json.loads(line) for line in (demo / "summary.jsonl").read_text().splitlines()]
    judged = {key: row[key] for key in SUMMARY_FIELDS}
    tokens = row["worker_tokens"] + row["grader_tokens"]
    assert judged == {
        "verified_runs": 5, "satisfied_passed": 2, "satisfied_failed": 1, "rejected_passed": 1, "rejected_failed": 1,
        "unverifiable": 0, "outside_matrix": {}, "false_satisfied_rate": 0.5, "false_discovery_rate": 0.333333,
        "false_rejection_rate": 0.333333, "balanced_error": 0.416667, "first_passed": 2, "first_checked": 5,
        "final_passed": 3, "final_checked": 5, "first_pass_rate": 0.4, "final_pass_rate": 0.6, "lift": 0.2, "lift_p": 1.0,
        "fixed": 1, "broken": 0, "pass_at_1": 0.6, "pass_at_k": 0.6, "pass_hat_k": 0.6, "pass_k": 1,
        "corrected_pass_rate": 0.6, "tokens_per_success": rounded(tokens / 3, 2),
        "usd_per_success": None,  # scripted models have no price
    }
    [csv_row] = csv.DictReader(io.StringIO((demo / "summary.csv").read_text()))
    assert [csv_row[key] for key in ("satisfied_failed", "rejected_failed", "false_satisfied_rate", "lift", "usd_per_success",
                                     "outside_matrix")] == ["1", "1", "0.5", "0.2", "", "{}"]
    tasks = [json.loads(line) for line in (demo / "summary_tasks.jsonl").read_text().splitlines()]
    assert [(t["task_id"], t["status"], t["verified_first"], t["verified_final"]) for t in tasks] == [
        ("HumanEval-0", "satisfied", True, True), ("HumanEval-1", "satisfied", False, True),
        ("HumanEval-2", "failed", True, True), ("HumanEval-3", "satisfied", False, False),
        ("HumanEval-4", "failed", False, False)]
    task_csv = list(csv.DictReader(io.StringIO((demo / "summary_tasks.csv").read_text())))
    assert [(t["task_id"], t["verified_first"], t["verified_final"]) for t in task_csv][1] == ("HumanEval-1", "False", "True")


def test_summaries_round_every_number_as_the_reports_do(demo):
    """Finding 10: summaries kept binary noise (``0.012936999999999999``) while reports rounded half to even."""
    for name in ("summary.jsonl", "summary_tasks.jsonl"):
        for row in map(json.loads, (demo / name).read_text().splitlines()):
            noisy = {key: value for key, value in row.items() if isinstance(value, float) and len(repr(value).split(".")[1]) > 6}
            assert not noisy, (name, noisy)
    [row] = [json.loads(line) for line in (demo / "summary.jsonl").read_text().splitlines()]
    assert row["false_rejection_rate"] == 0.333333 and row["tokens_per_success"] == rounded(row["tokens_per_success"], 2)


def test_report_md_shows_each_rate_with_its_count_and_interval(demo):
    text = (demo / "report.md").read_text()
    assert "false satisfied = of the final answers that failed the hidden checks, those the grader accepted (its leniency)" in text
    [judges] = md_table(text, "## Graders against hidden verification")
    assert {k: judges[k] for k in ("configuration", "verified", "outside the matrix")} == {
        "configuration": "scripted:demo / scripted:demo / humaneval", "verified": "5", "outside the matrix": "-"}
    assert [judges[k] for k in ("satisfied & passed", "satisfied & failed", "rejected & passed", "rejected & failed",
                                "unverifiable")] == ["2", "1", "1", "1", "0"]
    assert judges["false satisfied"] == LENIENT_1_OF_2
    assert judges["false discovery"] == "1/3 (33.3%, 95% CI 6.1-79.2%)"
    assert judges["false rejection"] == "1/3 (33.3%, 95% CI 6.1-79.2%)"
    assert judges["balanced error"] == "41.7% (95% CI 17.3-72.3%)"  # Wilson 9.5-90.5 and 6.1-79.2, squared and added
    [answers] = md_table(text, "### Answers against hidden verification")
    assert (answers["first answer passed"], answers["final answer passed"]) == (
        "2/5 (40.0%, 95% CI 11.8-76.9%)", "3/5 (60.0%, 95% CI 23.1-88.2%)")
    assert answers["lift"] == LIFT
    assert (answers["pass@1"], answers["k"], answers["corrected pass rate"].split(" (")[0]) == ("60.0%", "1", "60.0%")
    tokens = sum(load_task(p).usage[role].total_tokens for p in (demo / "tasks").iterdir() for role in ("worker", "grader"))
    assert (answers["tokens/verified success"], answers["est. USD/verified success"]) == (fmt_num(tokens / 3, 0), "n/a")
    # one grader on its own transcripts: nothing to rank it against
    [graders] = md_table(text, "### Graders ranked")
    assert (graders["rank"], graders["grader"], graders["workers"]) == ("-", "scripted:demo", "scripted:demo")
    assert {k: v for k, v in graders.items() if k not in ("rank", "grader", "transcripts", "workers")} == {
        k: v for k, v in judges.items() if k != "configuration"}
    # finding 10: the criteria table and the judges' tables name different things
    assert "| criterion | met at first grading | met at final grading |" in text


def _hrefs_of_rates(dom: str, table: str) -> list[tuple[str, str | None]]:
    """(text, link) of each cell of a table that holds a rate (a %)."""
    body = dom.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", body, re.DOTALL)
    found = []
    for cell in cells:
        text = re.sub(r"<[^>]+>", "", cell)
        if "%" in text:
            link = re.search(r'<a href="([^"]+)"', cell)
            found.append((text, html.unescape(link.group(1)) if link else None))
    return found


def test_report_html_links_every_rate_to_its_runs_and_shows_each_runs_hidden_check(demo, tmp_path):
    """Finding 11: "false satisfied 1/2" could not be followed to the run."""
    dom = browse((demo / "report.html").as_uri(), tmp_path / "p", "--dump-dom")
    for table in ("groups", "judges", "answers", "graders", "criteria-0"):
        rates = _hrefs_of_rates(dom, table)
        assert rates and all(link and link.startswith("#runs?") for _, link in rates), (table, rates)
    links = dict(_hrefs_of_rates(dom, "judges"))
    assert links[LENIENT_1_OF_2] == "#runs?group=0&cell=satisfied-failed"
    headers = [c.header for c in RUN_COLUMNS if c.web]
    [run] = _html_table(demo, links[LENIENT_1_OF_2][1:], tmp_path / "p", "runs", headers)
    assert (run["task"], run["status"], run["hidden check"]) == ("HumanEval-3", "satisfied", "failed")
    shown = _html_table(demo, "runs", tmp_path / "p", "runs", headers)
    assert [(r["task"], r["hidden check"]) for r in shown] == [
        ("HumanEval-0", "passed"), ("HumanEval-1", "failed \u2192 passed"), ("HumanEval-2", "passed"),
        ("HumanEval-3", "failed"), ("HumanEval-4", "failed")]
    assert [r["task"] for r in _html_table(demo, "runs?group=0&changed=yes", tmp_path / "p", "runs", headers)] == ["HumanEval-1"]


def test_report_html_shows_the_judges_in_chromium(demo, tmp_path):
    text = (demo / "report.md").read_text()
    [judges] = _html_table(demo, "judges", tmp_path / "p", "judges", list(md_table(text, "## Graders against hidden verification")[0]))
    assert (judges["satisfied & failed"], judges["false satisfied"]) == ("1", LENIENT_1_OF_2)
    [answers] = _html_table(demo, "answers", tmp_path / "p", "answers", list(md_table(text, "### Answers against hidden verification")[0]))
    assert answers["lift"] == LIFT
    assert answers["final answer passed"] == "3/5 (60.0%, 95% CI 23.1-88.2%)"


@pytest.fixture(scope="module")
def repeated_demo(tmp_path_factory) -> Path:
    """The HumanEval demo with three repeats of each of its five problems."""
    root = tmp_path_factory.mktemp("humaneval3")
    record = rubric_runner.run(["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]",
                                "run.repeats=3", "run.console=false"], root / "run")
    assert record.exit_code == 1
    return root / "run"


def _spans(text: str) -> list[tuple[float, float]]:
    """Every 95% interval a report writes: ``95% CI 9.5-90.5%`` and ``95% CI -15.2 to 52.1``."""
    found = re.findall(r"95% CI (-?[\d.,]+)-(-?[\d.,]+)%|95% CI (-?[\d.,]+) to (-?[\d.,]+)", text)
    return [(float((a or c).replace(",", "")), float((b or d).replace(",", ""))) for a, b, c, d in found]


def test_one_task_run_three_times_gives_no_interval_of_zero_width(tmp_path):
    """Issue 44, case 1: one task's three runs resampled are that task every time: the report said
    ``0/3 (0.0%, 95% CI 0.0-0.0%, 1 task)`` and a lift of ``+100.0 pts (95% CI 100.0 to 100.0, p = 1.0)``.
    A rate counts the task once (Wilson's on one task); a lift from fewer than 10 tasks has none, and says why."""
    record = rubric_runner.run(["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[1:2]",
                                "run.repeats=3", "run.console=false"], tmp_path / "run")
    assert record.status.value == "satisfied"
    text = (tmp_path / "run" / "report.md").read_text()
    [answers] = md_table(text, "### Answers against hidden verification")
    assert answers["first answer passed"] == "0/3 (0.0%, 95% CI 0.0-79.3%, 1 task)"
    assert answers["final answer passed"] == "3/3 (100.0%, 95% CI 20.7-100.0%, 1 task)"
    assert intervals.wilson(1, 1) == pytest.approx((0.2065, 1.0), abs=1e-4)  # one task: one observation
    assert answers["lift"] == "+100.0 pts (no interval: 1 task, fewer than 10), p = 1.0 (sign test on tasks); fixed 3, broken 0"
    spans = _spans(text)
    assert spans and all(low < high for low, high in spans)


def test_no_interval_a_report_of_repeated_tasks_writes_has_zero_width(repeated_demo):
    """Issue 44, case 1: five tasks run three times gave ``95% CI 0.0-100.0%`` and ``0.0 to 60.0`` from
    the bootstrap's few resamples; now no interval is a single point, and the lift says why it has none."""
    text = (repeated_demo / "report.md").read_text()
    spans = _spans(text)
    assert spans and all(low < high for low, high in spans)
    [answers] = md_table(text, "### Answers against hidden verification")
    assert "no interval: 5 tasks, fewer than 10" in answers["lift"]
    assert answers["corrected pass rate"] == "60.0% (no interval: 5 tasks, fewer than 10)"


def test_one_grading_pass_a_run_has_no_lift_and_says_why(tmp_path):
    """Issue 44, case 9: with grader.max_iterations=1 the first answer is the final one, so the lift is 0 by
    construction; the report printed ``+0.0 pts (95% CI -30.7 to 30.7, p = 1.0; ...)`` and the summary
    ``lift 0.0, lift_p 1.0`` as if it were measured."""
    record = rubric_runner.run(["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]",
                                "grader.max_iterations=1", "run.console=false"], tmp_path / "run")
    assert record.exit_code == 1
    [answers] = md_table((tmp_path / "run" / "report.md").read_text(), "### Answers against hidden verification")
    assert answers["lift"] == "none: one grading pass a run, its first answer is its final one"
    [row] = [json.loads(line) for line in (tmp_path / "run" / "summary.jsonl").read_text().splitlines()]
    assert (row["lift"], row["lift_p"], row["first_pass_rate"], row["final_pass_rate"]) == (None, None, 0.4, 0.4)
    single = RunHeader(worker=ModelInfo(model="w:model"), grader=GraderInfo(model="g:model", max_iterations=3),
                       config={"loop": {"arm": "single"}})
    j = judge([(single, r) for _, r in DEMO[:5]], PRICES)
    assert (j.single_pass, j.lift.value, j.lift_p, str(j.lift)) == (True, None, None, ONE_PASS)
    assert not judge(DEMO[:5], PRICES).single_pass  # three passes allowed: a lift, measured


def test_humaneval_pass_at_1_matches_its_verified_rate(repeated_demo):
    """Finding 4: with 3 repeats the report said pass@k 5/5, about the grader's satisfied, where 3/5 tasks
    passed check(); pass@k is now on the checks, satisfied@k on the verdicts, each with k stated."""
    text = (repeated_demo / "report.md").read_text()
    [answers] = md_table(text, "### Answers against hidden verification")
    assert answers["final answer passed"].startswith("9/15 (60.0%")
    assert (answers["pass@1"], answers["pass@k"], answers["pass^k"], answers["k"]) == ("60.0%", "60.0%", "60.0%", "3")
    [group] = md_table(text, "## By configuration")
    assert (group["satisfied@1"], group["satisfied@k"], group["k"]) == ("60.0%", "60.0%", "3")
    [row] = [json.loads(line) for line in (repeated_demo / "summary.jsonl").read_text().splitlines()]
    assert row["pass_at_1"] == row["final_pass_rate"] == 0.6 and row["pass_k"] == 3
    # three runs of each task are not fifteen independent answers: the intervals resample the five tasks
    [judges] = md_table(text, "## Graders against hidden verification")
    assert judges["false satisfied"].endswith(", 2 tasks)") and answers["final answer passed"].endswith(", 5 tasks)")


def test_without_verification_the_summaries_are_empty_and_the_tables_absent(demo, tmp_path):
    run_dir = _copy(demo, tmp_path)
    for path in (run_dir / "tasks").glob("*/result.json"):
        record = json.loads(path.read_text())
        del record["verification"]
        path.write_text(json.dumps(record))
    assert run_command(["report", str(run_dir)]) == 0
    [row] = [json.loads(line) for line in (run_dir / "summary.jsonl").read_text().splitlines()]
    assert {key: row[key] for key in SUMMARY_FIELDS} == dict.fromkeys(SUMMARY_FIELDS)
    assert {(t["verified_first"], t["verified_final"]) for t in map(json.loads, (run_dir / "summary_tasks.jsonl").open())} == {
        (None, None)}
    assert "hidden verification" not in (run_dir / "report.md").read_text()
    assert 'id="judges"' not in (run_dir / "report.html").read_text()


def test_with_repeats_the_lift_p_counts_tasks_not_runs():
    """One task fixed in each of its three repeats is one task that moved, not three independent pairs:
    the sign test over tasks gives p = 1.0 where McNemar over runs said 2 x (1/2)^3 = 0.25."""
    runs = [record("satisfied", False, True, task="a") for _ in range(3)]
    runs += [record("satisfied", True, True, task=t) for t in "bcd" for _ in range(3)]
    j = judge(runs, PRICES)
    assert j.repeated and (j.fixed, j.broken) == (3, 0)
    assert j.lift_p == 1.0 and intervals.mcnemar(3, 0) == 0.25
    # six tasks each fixed, none broken: the sign test's 2 x (1/2)^6
    many = judge([record("satisfied", False, True, task=t) for t in "abcdef" for _ in range(2)], PRICES)
    assert many.lift_p == pytest.approx(2 / 2 ** 6)
    # a task fixed twice and broken once moved up; one broken twice and fixed once moved down: no evidence
    mixed = [record("satisfied", False, True, task="u")] * 2 + [record("satisfied", True, False, task="u")]
    mixed += [record("satisfied", True, False, task="v")] * 2 + [record("satisfied", False, True, task="v")]
    assert judge(mixed, PRICES).lift_p == 1.0
