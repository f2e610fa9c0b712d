"""Judge error and loop lift: the grader's verdicts against hidden verification, with exact figures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli, verdict, write_script
from rubric_runner.config import DATA_DIR
from rubric_runner.records import (
    CheckOutcome,
    GraderInfo,
    ModelInfo,
    RunRecord,
    Status,
    Usage,
    Verification,
    Verifications,
    load_record,
)
from rubric_runner.report import load_prices
from rubric_runner.report.judge import Rate, grader_key, judge, judge_groups, ranked

PRICES = {"w:model": {"input": 1.0, "output": 2.0}, "g:model": {"input": 10.0, "output": 20.0}}
OUTCOME = {True: CheckOutcome.PASSED, False: CheckOutcome.FAILED, None: CheckOutcome.UNVERIFIABLE}


def _check(passed: bool | None) -> Verification:
    return Verification(outcome=OUTCOME[passed], passed=passed)


def record(status: str, first: bool | None, final: bool | None, grader: str = "g:model", tokens: int = 100,
           overrides: list[str] | None = None) -> RunRecord:
    """A run ending ``status`` whose first and final answers verified ``first`` and ``final``
    (None: unverifiable); ``tokens`` billed by each of worker and grader, half input, half output."""
    usage = {role: Usage(calls=1, input_tokens=tokens // 2, output_tokens=tokens // 2, total_tokens=tokens)
             for role in ("worker", "grader")}
    return RunRecord(status=Status(status), usage=usage, worker=ModelInfo(model="w:model"), grader=GraderInfo(model=grader),
                     verification=Verifications(first=_check(first), final=_check(final)),
                     overrides=overrides or [], regraded_from="/runs/x" if overrides else None)


def unverified(status: str = "error") -> RunRecord:
    """A run that ended before its answers could be checked (no verification at all)."""
    return RunRecord(status=Status(status), usage={"worker": Usage(total_tokens=60, input_tokens=30, output_tokens=30)},
                     worker=ModelInfo(model="w:model"), grader=GraderInfo(model="g:model"))


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
    assert Rate(5, 10).interval == pytest.approx((0.236593, 0.763407), abs=1e-6)
    assert Rate(0, 10).interval == pytest.approx((0.0, 0.277533), abs=1e-6)
    assert Rate(10, 10).interval == pytest.approx((0.722467, 1.0), abs=1e-6)
    assert Rate(1, 4).interval == pytest.approx((0.045587, 0.699358), abs=1e-6)
    assert (Rate(0, 0).value, Rate(0, 0).interval, str(Rate(0, 0))) == (None, None, "-")
    assert str(Rate(1, 4)) == "1/4 (25.0%, 95% CI 4.6-69.9%)"


def test_confusion_matrix_counts_unverifiable_runs_apart():
    j = judge(DEMO, PRICES)
    cells = (j.satisfied_passed, j.satisfied_failed, j.rejected_passed, j.rejected_failed)
    assert (j.runs, cells, j.unverifiable) == (6, (2, 1, 1, 1), 1)
    assert (j.false_satisfied.part, j.false_satisfied.whole) == (1, 2)   # of the two failing answers, one accepted
    assert (j.false_rejection.part, j.false_rejection.whole) == (1, 3)   # of the three passing answers, one rejected
    assert (j.error.part, j.error.whole) == (2, 5)
    assert str(j.false_satisfied) == "1/2 (50.0%, 95% CI 9.5-90.5%)"
    assert str(j.error) == "2/5 (40.0%, 95% CI 11.8-76.9%)"


def test_the_loops_lift_from_first_to_final_verification():
    j = judge(DEMO, PRICES)
    # unverifiable answers are in the denominator and never pass
    assert (j.first.part, j.first.whole, j.final.part, j.final.whole) == (2, 6, 3, 6)
    assert j.lift == pytest.approx(1 / 6)
    assert (j.fixed, j.broken) == (1, 0)
    assert j.first.interval == pytest.approx((0.096771, 0.700007), abs=1e-6)
    assert j.final.interval == pytest.approx((0.187616, 0.812384), abs=1e-6)
    worse = judge([record("failed", True, False), record("satisfied", True, True)], PRICES)
    assert (worse.lift, worse.fixed, worse.broken) == (-0.5, 0, 1)


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
    assert (nothing.tokens_per_success, nothing.cost_per_success, nothing.lift) == (None, None, 0.0)


def test_no_judgement_without_verification():
    assert judge([unverified("satisfied"), unverified()], PRICES) is None
    assert judge([], PRICES) is None


def test_graders_ranked_by_error_on_the_same_answers():
    truth = [(True, True), (False, True), (True, True), (False, False), (False, False)]  # (first, final) passed

    def graded(script: str, verdicts: str) -> list[RunRecord]:
        return [record("satisfied" if verdict == "S" else "failed", first, final, overrides=[f"grader.script={script}"])
                for verdict, (first, final) in zip(verdicts, truth)]

    records = [*graded("lenient.yaml", "SSSSS"), *graded("strict.yaml", "FFFFF"), *graded("right.yaml", "SSSFF"),
               *graded("picky.yaml", "FFSFF")]
    order = [(key, (j.error.part, j.false_satisfied.part, j.false_rejection.part))
             for key, j in ranked(judge_groups(records, grader_key, PRICES))]
    assert order == [
        (("g:model", "grader.script=right.yaml"), (0, 0, 0)),
        (("g:model", "grader.script=picky.yaml"), (2, 0, 2)),    # as many errors as lenient, none of them a false satisfied
        (("g:model", "grader.script=lenient.yaml"), (2, 2, 0)),
        (("g:model", "grader.script=strict.yaml"), (3, 0, 3)),
    ]
    assert all(j.error.whole == 5 and j.false_satisfied.whole == 2 and j.false_rejection.whole == 3
               for _, j in ranked(judge_groups(records, grader_key, PRICES)))


def test_a_graders_key_is_its_model_and_for_a_regrade_its_overrides():
    assert grader_key(record("satisfied", True, True, grader="anthropic:claude-haiku-4-5")) == ("anthropic:claude-haiku-4-5", "")
    regraded = record("satisfied", True, True, overrides=["grader=scripted", "grader.script=a.yaml"])
    assert grader_key(regraded) == ("g:model", "grader=scripted grader.script=a.yaml")
    groups = judge_groups([*DEMO, record("satisfied", True, True, grader="other:model")], lambda r: r.grader.model, PRICES)
    assert [(key, j.runs) for key, j in groups.items()] == [("g:model", 6), ("other:model", 1)]


# --- from real runs: the scripted HumanEval demo, judged, then regraded by several graders ---

JUDGES = DATA_DIR / "scripts" / "judges"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The offline HumanEval demo over its first five problems (hidden verification in the sandbox)."""
    root = tmp_path_factory.mktemp("humaneval")
    proc = run_cli("rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]", "run.console=false",
                   f"hydra.run.dir={root / 'run'}", cwd=root)
    assert proc.returncode == 1, proc.stderr  # two tasks end failed
    return root / "run"


def test_a_lenient_verdict_is_a_false_satisfied_and_the_loop_lifts_the_pass_rate(demo):
    records = [load_record(path) for path in sorted((demo / "tasks").iterdir())]
    j = judge(records, load_prices())
    # HumanEval-3: its examples pass, HumanEval's check() does not, and the scripted grader is satisfied
    cells = (j.satisfied_passed, j.satisfied_failed, j.rejected_passed, j.rejected_failed)
    assert (j.runs, cells, j.unverifiable) == (5, (2, 1, 1, 1), 0)
    assert (j.false_satisfied.part, j.false_satisfied.whole, j.false_rejection.part, j.false_rejection.whole) == (1, 2, 1, 3)
    # HumanEval-1 fails at first and passes after the grader's revision request
    assert (j.first.part, j.final.part, j.fixed, j.broken) == (2, 3, 1, 0)
    assert j.lift == pytest.approx(0.2)
    assert j.tokens == sum(r.usage[role].total_tokens for r in records for role in ("worker", "grader")) > 0
    assert j.tokens_per_success == pytest.approx(j.tokens / 3) and j.cost is None  # scripted models have no price


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def test_regrade_with_several_graders_ranks_them_on_the_same_transcripts(demo, tmp_path):
    run_dir = _copy(demo, tmp_path)
    scripts = ",".join(str(JUDGES / f"{name}.yaml") for name in ("lenient", "strict", "careful"))
    proc = run_cli("regrade", str(run_dir), "-m", f"grader.script={scripts}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the strict grader's verdicts are not satisfied
    ranking = proc.stdout[proc.stdout.index("graders ranked"):].splitlines()[1:4]
    assert [line.split(": error ")[0].rsplit("/", 1)[1] for line in ranking] == ["careful.yaml", "lenient.yaml", "strict.yaml"]
    assert "error 0/5 (0.0%, 95% CI 0.0-43.4%); false satisfied 0/2" in ranking[0]
    assert "error 2/5 (40.0%, 95% CI 11.8-76.9%); false satisfied 2/2 (100.0%" in ranking[1]
    assert "error 3/5 (60.0%, 95% CI 23.1-88.2%); false satisfied 0/2 (0.0%, 95% CI 0.0-65.8%); false rejection 3/3" in ranking[2]
    (out_dir,) = (run_dir / "regrades").iterdir()
    originals = {path.name: load_record(path) for path in (run_dir / "tasks").iterdir()}
    for index, name in enumerate(("lenient", "strict", "careful")):
        regraded = [load_record(path) for path in sorted((out_dir / str(index) / "tasks").iterdir())]
        assert [r.overrides for r in regraded] == [[f"grader.script={JUDGES / name}.yaml"]] * 5
        # the same answers, verified once by the original run: the regrade re-ran no check
        assert all(r.verification == originals[Path(r.run_dir).name].verification for r in regraded)
    assert {"report.md", "report.html", "summary.jsonl"} <= {path.name for path in out_dir.iterdir()}


def test_a_sweep_dir_is_regraded_job_by_job_and_its_regrades_are_not_its_runs(tmp_path):
    # each transcript is its own thread: a scripted grader replays its script from the top for each;
    # a satisfied verdict runs the suite first, as rubric=code's criteria ask
    run_suite = {"tool_calls": [{"name": "run_test_suite", "args": {"code": "def find_duplicates(lst):\n    return []\n"}}]}
    ok = write_script(tmp_path / "ok.yaml", worker=[], grader=[run_suite, verdict("satisfied", ("c", True))])
    revise = write_script(tmp_path / "revise.yaml", worker=[], grader=[verdict("needs_revision", ("c", False))])
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
    assert records["1/1"].regraded_from == str(sweep_dir / "1")
    ranking = proc.stdout[proc.stdout.index("graders ranked"):].splitlines()[1:3]
    assert ranking[0].startswith(f"  1. grader.script={ok}: error 0/2 (0.0%")
    assert ranking[1].startswith(f"  2. grader.script={revise}: error 2/2 (100.0%")
    assert "false rejection 2/2" in ranking[1]
    report = run_cli("report", str(sweep_dir), cwd=tmp_path)
    assert "report: 2 runs: 2 satisfied" in report.stdout, report.stdout + report.stderr
