"""Full runs with scripted models: every terminal status, its exit code and its record."""

from __future__ import annotations

import json

import pytest
from support.helpers import only_task, read_events, run_json, run_scripted, task_dir_of, verdict, write_script

import rubric_runner

CRITERIA = ("The poem has three lines", "The theme is spring")


def test_satisfied_on_first_pass(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "a\nb\nc"}],
        grader=[verdict("satisfied", (CRITERIA[0], True), (CRITERIA[1], True))],
    )
    result, run_dir = run_scripted(tmp_path, script)
    assert (result.status, result.exit_code, only_task(result).iterations) == ("satisfied", 0, 1)
    record = run_json(run_dir)
    assert record["status"] == "satisfied"
    assert record["schema_version"] == 3
    assert record["task"]["final_answer"] == "a\nb\nc"
    assert record["task"]["evaluations"][0]["criteria"] == [
        {"name": CRITERIA[0], "passed": True},
        {"name": CRITERIA[1], "passed": True},
    ]
    assert record["task"]["usage"]["worker"]["calls"] == 1 and record["task"]["usage"]["grader"]["calls"] == 1
    assert record["task"]["usage"]["worker"]["total_tokens"] > 0
    assert record["header"]["worker"]["scripted"] is True
    assert "worker=scripted" in record["header"]["sources"]["overrides"]


def test_max_iterations_reached(tmp_path):
    failing = verdict("needs_revision", (CRITERIA[0], False), (CRITERIA[1], True))
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "draft one"}, {"content": "draft two"}],
        grader=[failing, failing],
    )
    result, run_dir = run_scripted(tmp_path, script, "grader.max_iterations=2")
    assert (result.status, result.exit_code, only_task(result).iterations) == ("max_iterations_reached", 1, 2)
    assert [e.result for e in only_task(result).evaluations] == ["needs_revision", "max_iterations_reached"]
    assert only_task(result).final_answer == "draft two"
    transcript = json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"]
    injected = [m for m in transcript if m["type"] == "human" and m["data"].get("name") == "rubric_grader"]
    assert len(injected) == 1 and f"fix {CRITERIA[0]}" in injected[0]["data"]["content"]


def test_failed_verdict(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "anything"}],
        grader=[verdict("failed", explanation="the rubric contradicts itself")],
    )
    result, _ = run_scripted(tmp_path, script)
    assert (result.status, result.exit_code) == ("failed", 1)
    assert only_task(result).evaluations[-1].explanation == "the rubric contradicts itself"


def test_grader_error_is_recorded_with_its_cause(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "anything"}],
        grader=[{"raise": "simulated provider timeout"}],
    )
    result, run_dir = run_scripted(tmp_path, script)
    assert (result.status, result.exit_code) == ("grader_error", 3)
    assert "simulated provider timeout" in result.error.message
    ends = [e for e in read_events(run_dir) if e["event"] == "rubric_evaluation_end"]
    assert ends[-1]["result"] == "grader_error" and ends[-1]["criteria"] == []


def test_worker_exception_still_leaves_a_record(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"raise": "worker provider is down"}], grader=[])
    result, run_dir = run_scripted(tmp_path, script)
    assert (result.status, result.exit_code) == ("error", 3)
    record = run_json(run_dir)
    assert record["status"] == "error" and "worker provider is down" in record["error"]["message"]
    assert read_events(run_dir)[-1]["event"] == "run_end"


def test_events_cover_the_run(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "x"}],
        grader=[verdict("satisfied", (CRITERIA[0], True))],
    )
    _, run_dir = run_scripted(tmp_path, script)
    events = read_events(run_dir)
    names = [e["event"] for e in events]
    assert names[0] == "run_start" and names[-1] == "run_end"
    for expected in ("rubric_evaluation_start", "rubric_evaluation_end", "token_usage"):
        assert expected in names
    end = next(e for e in events if e["event"] == "rubric_evaluation_end")
    assert {"grading_run_id", "iteration", "result", "explanation", "criteria"} <= set(end)
    # deepagents logs through stdlib logging; those records land in the same file
    assert any(e.get("logger", "").startswith("deepagents") for e in events)


@pytest.mark.parametrize("rubric", ["code", "haiku", "summary"])
def test_builtin_demo_scripts_end_satisfied(tmp_path, rubric):

    
    overrides = ["worker=scripted", "grader=scripted", f"rubric={rubric}", "run.console=false"]
    result = rubric_runner.run(overrides, tmp_path / "run")
    assert result.status == "satisfied", result.error


def test_code_demo_grader_runs_the_real_test_suite(tmp_path):
    """The scripted verdicts agree with what the real run_test_suite reports."""

    
    overrides = ["worker=scripted", "grader=scripted", "rubric=code", "run.console=false"]
    result = rubric_runner.run(overrides, tmp_path / "run")
    assert (result.status, only_task(result).iterations, result.exit_code) == ("satisfied", 2, 0)
    outputs = [
        json.loads(e["output"])
        for e in read_events(tmp_path / "run")
        if e["event"] == "tool_call_end" and e["tool"] == "run_test_suite"
    ]
    assert [o["ok"] for o in outputs] == [False, True]
    assert outputs[0]["failures"] == ["test_unhashable: TypeError: unhashable type: 'list'"]
    assert outputs[1]["passed"] == ["test_basic", "test_empty", "test_no_duplicates", "test_unhashable"]
    first_gap = only_task(result).evaluations[0].criteria[0].gap
    assert "test_unhashable" in first_gap and only_task(result).evaluations[0].result == "needs_revision"
