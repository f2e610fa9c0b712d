"""Judge error and loop lift: the grader's verdicts against hidden verification, with exact figures."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from browser import Page, browse
from conftest import run_cli, verdict, write_script

import rubric_runner
from rubric_runner.analysis.judge import (
    SUMMARY_FIELDS,
    Rate,
    grader_key,
    judge,
    judge_groups,
    ranked,
)
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
from rubric_runner.report import load_prices

PRICES = {"w:model": {"input": 1.0, "output": 2.0}, "g:model": {"input": 10.0, "output": 20.0}}
OUTCOME = {True: CheckOutcome.PASSED, False: CheckOutcome.FAILED, None: CheckOutcome.UNVERIFIABLE}


def _check(passed: bool | None) -> Verification:
    return Verification(outcome=OUTCOME[passed], passed=passed)


def header(grader: str = "g:model", overrides: list[str] | None = None) -> RunHeader:
    """Who ran a task: a worker, a grader, and for a regrade the overrides it put on the graded run."""
    return RunHeader(worker=ModelInfo(model="w:model"), grader=GraderInfo(model=grader),
                     regraded_from="/runs/x" if overrides else None, regraded_with=overrides)


def record(status: str, first: bool | None, final: bool | None, grader: str = "g:model", tokens: int = 100,
           overrides: list[str] | None = None) -> tuple[RunHeader, TaskRecord]:
    """A task ending ``status`` whose first and final answers verified ``first`` and ``final``
    (None: unverifiable); ``tokens`` billed by each of worker and grader, half input, half output."""
    usage = {role: Usage(calls=1, input_tokens=tokens // 2, output_tokens=tokens // 2, total_tokens=tokens)
             for role in ("worker", "grader")}
    return header(grader, overrides), TaskRecord(status=Status(status), usage=usage,
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

    def graded(script: str, verdicts: str) -> list[tuple[RunHeader, TaskRecord]]:
        return [record("satisfied" if verdict == "S" else "failed", first, final, overrides=[f"grader.script={script}"])
                for verdict, (first, final) in zip(verdicts, truth)]

    records = [*graded("lenient.yaml", "SSSSS"), *graded("strict.yaml", "FFFFF"), *graded("right.yaml", "SSSFF"),
               *graded("picky.yaml", "FFSFF")]
    order = [(key, (j.error.part, j.false_satisfied.part, j.false_rejection.part))
             for key, j in ranked(judge_groups(records, lambda task: grader_key(task[0]), PRICES))]
    assert order == [
        (("g:model", "grader.script=right.yaml"), (0, 0, 0)),
        (("g:model", "grader.script=picky.yaml"), (2, 0, 2)),    # as many errors as lenient, none of them a false satisfied
        (("g:model", "grader.script=lenient.yaml"), (2, 2, 0)),
        (("g:model", "grader.script=strict.yaml"), (3, 0, 3)),
    ]
    assert all(j.error.whole == 5 and j.false_satisfied.whole == 2 and j.false_rejection.whole == 3
               for _, j in ranked(judge_groups(records, lambda task: grader_key(task[0]), PRICES)))


def test_a_graders_key_is_its_model_and_for_a_regrade_its_overrides():
    assert grader_key(header("anthropic:claude-haiku-4-5")) == ("anthropic:claude-haiku-4-5", "")
    assert grader_key(header(overrides=["grader=scripted", "grader.script=a.yaml"])) == ("g:model", "grader=scripted grader.script=a.yaml")
    groups = judge_groups([*DEMO, record("satisfied", True, True, grader="other:model")], lambda r: r[0].grader.model, PRICES)
    assert [(key, j.runs) for key, j in groups.items()] == [("g:model", 6), ("other:model", 1)]


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
    assert j.lift == pytest.approx(0.2)
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
    assert [line.split(": error ")[0].rsplit("/", 1)[1] for line in ranking] == ["careful.yaml", "lenient.yaml", "strict.yaml"]
    assert "error 0/5 (0.0%, 95% CI 0.0-43.4%); false satisfied 0/2" in ranking[0]
    assert "error 2/5 (40.0%, 95% CI 11.8-76.9%); false satisfied 2/2 (100.0%" in ranking[1]
    assert "error 3/5 (60.0%, 95% CI 23.1-88.2%); false satisfied 0/2 (0.0%, 95% CI 0.0-65.8%); false rejection 3/3" in ranking[2]
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
    graders = _md_table(text, "### Graders across workers, fewest errors first")
    assert [(g["rank"], g["grader"].rsplit("/", 1)[1], g["error"], g["false satisfied"], g["false rejection"])
            for g in graders] == [
        ("1", "careful.yaml", "0/5 (0.0%, 95% CI 0.0-43.4%)", "0/2 (0.0%, 95% CI 0.0-65.8%)", "0/3 (0.0%, 95% CI 0.0-56.1%)"),
        ("2", "lenient.yaml", "2/5 (40.0%, 95% CI 11.8-76.9%)", "2/2 (100.0%, 95% CI 34.2-100.0%)", "0/3 (0.0%, 95% CI 0.0-56.1%)"),
        ("3", "strict.yaml", "3/5 (60.0%, 95% CI 23.1-88.2%)", "0/2 (0.0%, 95% CI 0.0-65.8%)", "3/3 (100.0%, 95% CI 43.9-100.0%)"),
    ]
    # measured on the same answers, every grader shows the original run's lift
    assert {(g["first pass"], g["final pass"], g["lift"], g["workers"]) for g in graders} == {
        ("2/5 (40.0%, 95% CI 11.8-76.9%)", "3/5 (60.0%, 95% CI 23.1-88.2%)", "+20.0 pts (fixed 1, broken 0)", "scripted:demo")}
    judges = _md_table(text, "## Graders against hidden verification")
    assert sorted((j["grader"].rsplit("/", 1)[1], j["satisfied & failed"], j["rejected & passed"]) for j in judges) == [
        ("careful.yaml", "0", "0"), ("lenient.yaml", "2", "0"), ("strict.yaml", "0", "3")]
    shown = _html_table(out_dir, "graders?sort=false+satisfied&order=descending", tmp_path / "p", "graders", list(graders[0]))
    assert [(g["rank"], g["grader"].rsplit("/", 1)[1]) for g in shown] == [("2", "lenient.yaml"), ("1", "careful.yaml"),
                                                                            ("3", "strict.yaml")]


def test_a_sweep_dir_is_regraded_job_by_job_and_its_regrades_are_not_its_runs(tmp_path, capsys):
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
    assert records["1/1"].header.regraded_from == str(sweep_dir / "1")
    ranking = proc.stdout[proc.stdout.index("graders ranked"):].splitlines()[1:3]
    assert ranking[0].startswith(f"  1. grader.script={ok}: error 0/2 (0.0%")
    assert ranking[1].startswith(f"  2. grader.script={revise}: error 2/2 (100.0%")
    assert "false rejection 2/2" in ranking[1]
    capsys.readouterr()
    assert run_command(["report", str(sweep_dir)]) == 0
    assert "report: 2 runs: 2 satisfied" in capsys.readouterr().out


# --- the judgement in the summary files and in both reports ---

LENIENT_1_OF_2 = "1/2 (50.0%, 95% CI 9.5-90.5%)"
"""The demo's false-satisfied rate: of the two final answers that fail check(), the grader accepted one."""


def _md_table(text: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table after ``heading``, a dict per row keyed by its header."""
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    header, rows = table[0], table[2:]
    return [dict(zip(header, row, strict=True)) for row in rows]


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
        "unverifiable": 0, "false_satisfied_rate": 0.5, "false_rejection_rate": pytest.approx(1 / 3), "error_rate": 0.4,
        "first_passed": 2, "final_passed": 3, "first_pass_rate": 0.4, "final_pass_rate": 0.6, "lift": 0.2,
        "tokens_per_success": pytest.approx(tokens / 3), "usd_per_success": None,  # scripted models have no price
    }
    [csv_row] = csv.DictReader(io.StringIO((demo / "summary.csv").read_text()))
    assert [csv_row[key] for key in ("satisfied_failed", "rejected_failed", "false_satisfied_rate", "lift", "usd_per_success")] == [
        "1", "1", "0.5", "0.2", ""]
    tasks = [json.loads(line) for line in (demo / "summary_tasks.jsonl").read_text().splitlines()]
    assert [(t["task_id"], t["status"], t["verified_first"], t["verified_final"]) for t in tasks] == [
        ("HumanEval-0", "satisfied", True, True), ("HumanEval-1", "satisfied", False, True),
        ("HumanEval-2", "failed", True, True), ("HumanEval-3", "satisfied", False, False),
        ("HumanEval-4", "failed", False, False)]
    task_csv = list(csv.DictReader(io.StringIO((demo / "summary_tasks.csv").read_text())))
    assert [(t["task_id"], t["verified_first"], t["verified_final"]) for t in task_csv][1] == ("HumanEval-1", "False", "True")


def test_report_md_shows_each_rate_with_its_count_and_interval(demo):
    text = (demo / "report.md").read_text()
    assert "false satisfied = of the final answers that failed the hidden checks, those the grader accepted (its leniency)" in text
    [judges] = _md_table(text, "## Graders against hidden verification")
    assert {k: judges[k] for k in ("worker", "grader", "rubric", "verified")} == {
        "worker": "scripted:demo", "grader": "scripted:demo", "rubric": "humaneval", "verified": "5"}
    assert [judges[k] for k in ("satisfied & passed", "satisfied & failed", "rejected & passed", "rejected & failed",
                                "unverifiable")] == ["2", "1", "1", "1", "0"]
    assert judges["false satisfied"] == LENIENT_1_OF_2
    assert judges["false rejection"] == "1/3 (33.3%, 95% CI 6.1-79.2%)"
    assert judges["error"] == "2/5 (40.0%, 95% CI 11.8-76.9%)"
    assert (judges["first pass"], judges["final pass"]) == ("2/5 (40.0%, 95% CI 11.8-76.9%)", "3/5 (60.0%, 95% CI 23.1-88.2%)")
    assert judges["lift"] == "+20.0 pts (fixed 1, broken 0)"
    tokens = sum(load_task(p).usage[role].total_tokens for p in (demo / "tasks").iterdir() for role in ("worker", "grader"))
    assert (judges["tokens/verified success"], judges["est. USD/verified success"]) == (f"{tokens / 3:,.0f}", "n/a")
    [graders] = _md_table(text, "### Graders across workers, fewest errors first")
    assert (graders["rank"], graders["grader"], graders["workers"]) == ("1", "scripted:demo", "scripted:demo")
    assert {k: v for k, v in graders.items() if k not in ("rank", "workers")} == {
        k: v for k, v in judges.items() if k not in ("worker", "rubric")}


def test_report_html_shows_the_judges_in_chromium(demo, tmp_path):
    headers = list(_md_table((demo / "report.md").read_text(), "## Graders against hidden verification")[0])
    [judges] = _html_table(demo, "judges", tmp_path / "p", "judges", headers)
    assert (judges["satisfied & failed"], judges["false satisfied"]) == ("1", LENIENT_1_OF_2)
    assert judges["lift"] == "+20.0 pts (fixed 1, broken 0)"
    assert judges["final pass"] == "3/5 (60.0%, 95% CI 23.1-88.2%)"


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
