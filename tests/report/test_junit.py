"""``report DIR --junit FILE``: a scripted code_tasks run as twelve JUnit test cases; failures carry the
grader's gaps, errors, and runs not finished, as CI systems read them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.helpers import run_cli
from support.many_runs import write_task_job, write_task_sweep

import rubric_runner
from rubric_runner.records import Status

CODE_TASKS = {json.loads(line)["id"] for line in
              (Path(rubric_runner.__file__).parent / "data" / "datasets" / "code_tasks.jsonl").read_text().splitlines() if line.strip()}


@pytest.fixture(scope="module")
def code_tasks_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("junit") / "run"
    record = rubric_runner.run(["worker=scripted", "grader=scripted", "rubric=code_tasks", "run.console=false"], run_dir)
    assert record.aggregate.satisfied == 12
    return run_dir


def test_a_code_tasks_run_is_twelve_passing_test_cases(code_tasks_run, tmp_path):
    junit = tmp_path / "out" / "junit.xml"
    proc = run_cli("report", str(code_tasks_run), "--junit", str(junit), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(junit) in proc.stdout
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 12
    assert {case.get("name") for case in cases} == {f"{task} [r0]" for task in CODE_TASKS}
    assert {case.get("classname") for case in cases} == {"code_tasks"}
    assert not [child for case in cases for child in case if child.tag in ("failure", "error", "skipped")]
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("12", "0", "0")
    statuses = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")} for case in cases}
    assert statuses["find_duplicates [r0]"]["status"] == "satisfied" and statuses["find_duplicates [r0]"]["iterations"] == "2"


def test_failures_carry_the_graders_gaps(tmp_path):
    write_task_sweep(tmp_path / "sweep", jobs=2, tasks=8)  # job 0 misses task 0 and 7, job 1 task 0 and 5
    record_file = tmp_path / "sweep" / "1" / "tasks" / "task00005-r0" / "result.json"
    record = json.loads(record_file.read_text())
    record["evaluations"][-1]["criteria"][0]["gap"] = "test_order fails: \x1b[31m<b>&</b> expected [1, 2]"
    record_file.write_text(json.dumps(record))
    junit = tmp_path / "junit.xml"
    proc = run_cli("report", str(tmp_path / "sweep"), "--junit", str(junit), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "16" and root.get("failures") == "4"
    suites = root.findall("testsuite")
    assert [suite.get("name") for suite in suites] == ["worker.model=scripted:w0", "worker.model=scripted:w1"]
    failed = {(suite.get("name"), case.get("name")): case.find("failure") for suite in suites for case in suite
              if case.find("failure") is not None}
    assert sorted(name for _, name in failed) == ["task00000 [r0]", "task00000 [r0]", "task00005 [r0]", "task00007 [r0]"]
    assert failed["worker.model=scripted:w0", "task00007 [r0]"].get("message") == "All tests pass: test_order fails"
    assert failed["worker.model=scripted:w0", "task00007 [r0]"].get("type") == "max_iterations_reached"
    odd = failed["worker.model=scripted:w1", "task00005 [r0]"]
    assert odd.get("message") == "All tests pass: test_order fails: \ufffd[31m<b>&</b> expected [1, 2]"
    assert "status: failed" in odd.text and "- All tests pass: test_order fails" in odd.text


def test_errors_and_unfinished_runs(tmp_path):
    write_task_job(tmp_path / "job", [Status.SATISFIED, Status.GRADER_ERROR, Status.INTERRUPTED, Status.BUDGET_EXCEEDED])
    checked = tmp_path / "job" / "tasks" / "t0-r0" / "result.json"
    record = json.loads(checked.read_text())
    record["verification"] = {"final": {"outcome": "failed", "passed": False}}
    checked.write_text(json.dumps(record))
    junit = tmp_path / "junit.xml"
    assert run_cli("report", str(tmp_path / "job"), "--junit", str(junit), cwd=tmp_path).returncode == 0
    root = ET.parse(junit).getroot()
    kinds = {case.get("name"): [child.tag for child in case if child.tag != "properties"] for case in root.iter("testcase")}
    assert kinds == {"t0 [r0]": [], "t1 [r0]": ["error"], "t2 [r0]": ["skipped"], "t3 [r0]": ["skipped"]}
    assert (root.get("errors"), root.get("skipped"), root.get("failures")) == ("1", "2", "0")
    assert root.find(".//skipped").get("message") == "not finished: interrupted"
    properties = {p.get("name"): p.get("value") for p in root.find("./testsuite/testcase").iter("property")}
    assert properties["verified_final"] == "false" and properties["status"] == "satisfied"


def test_a_junit_file_that_cannot_be_written_is_one_line(tmp_path):
    write_task_job(tmp_path / "job", [Status.SATISFIED])
    (tmp_path / "taken").write_text("a file, not a dir")
    proc = run_cli("report", str(tmp_path / "job"), "--junit", str(tmp_path / "taken" / "junit.xml"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert f"--junit: cannot write {tmp_path / 'taken' / 'junit.xml'}: File exists" in proc.stderr
