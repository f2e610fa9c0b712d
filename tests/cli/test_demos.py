"""The offline demos: the scripted grader calls the real tools, and its verdicts agree with them; the
hidden verification runs the same tools on the first and the final answer."""

from __future__ import annotations

import json
import re

import pytest
from support.helpers import only_task, read_events, run_json

import rubric_runner
from rubric_runner.cli import run_command


def _demo(tmp_path, rubric: str):
    overrides = ["worker=scripted", "grader=scripted", f"rubric={rubric}", "run.console=false", "run.preview_chars=100000"]
    result = rubric_runner.run(overrides, tmp_path / "run")
    outputs = [json.loads(e["output"]) for e in read_events(tmp_path / "run") if e["event"] == "tool_call_end"]
    return result, outputs


def test_haiku_demo_counts_syllables_for_real(tmp_path):
    result, outputs = _demo(tmp_path, "haiku")
    assert (result.status, only_task(result).iterations, result.exit_code) == ("satisfied", 2, 0)
    assert [o["syllables"] for o in outputs] == [[7, 7, 5], [5, 7, 5]]
    assert [o["matches_pattern"] for o in outputs] == [False, True]
    assert outputs[0]["problems"] == ["line 1: 7 syllables, expected 5"]
    assert outputs[0]["lines"][0]["words"] in only_task(result).evaluations[0].criteria[1].gap
    assert [e.result for e in only_task(result).evaluations] == ["needs_revision", "satisfied"]
    first, final = only_task(result).verification.first, only_task(result).verification.final
    assert (first.outcome, final.outcome) == ("failed", "passed")
    assert first.checks[0].details["problems"] == ["line 1: 7 syllables, expected 5"]


def test_summary_demo_checks_terms_for_real(tmp_path):
    result, outputs = _demo(tmp_path, "summary")
    assert (result.status, only_task(result).iterations, result.exit_code) == ("satisfied", 2, 0)
    assert [o["sentence_count"] for o in outputs] == [1, 1]
    assert [o["missing_terms"] for o in outputs] == [["chlorophyll"], []]
    first = {c.name: c.passed for c in only_task(result).evaluations[0].criteria}
    assert first == {"The answer is one sentence": True, "The answer mentions light and chlorophyll": False}
    assert (only_task(result).verified("first"), only_task(result).verified("final")) == (False, True)
    assert only_task(result).verification.first.checks[0].details["missing_terms"] == ["chlorophyll"]


def test_code_tasks_run_offline_with_real_test_runs(tmp_path):
    result, _ = _demo(tmp_path, "code_tasks")
    assert (result.status, result.aggregate.satisfied, result.aggregate.runs) == ("satisfied", 12, 12)
    iterations = {task.task_id: task.iterations for task in result.tasks}
    revised = {"find_duplicates", "flatten", "is_palindrome", "merge_intervals", "second_largest"}
    assert iterations == {task_id: 2 if task_id in revised else 1 for task_id in iterations}
    trail: dict[str, list] = {}  # per task: each test run's outcome, then the verdict that followed it
    for event in read_events(tmp_path / "run"):
        if event["event"] == "tool_call_end":
            trail.setdefault(event["task_id"], []).append(json.loads(event["output"]))
        elif event["event"] == "rubric_evaluation_end":
            trail[event["task_id"]].append(event)
    assert len(trail) == 12
    for task_id, steps in trail.items():
        runs, verdicts = steps[0::2], steps[1::2]
        assert [r["ok"] for r in runs] == [False] * (len(runs) - 1) + [True], task_id
        for test_run, verdict in zip(runs, verdicts):
            if test_run["ok"]:
                assert verdict["result"] == "satisfied", task_id
                continue
            assert verdict["result"] == "needs_revision", task_id
            gap = verdict["criteria"][0]["gap"]
            failing = [failure.split(":")[0] for failure in test_run["failures"]]
            assert failing and all(name in gap for name in failing), (task_id, failing, gap)
            assert set(re.findall(r"test_\w+", gap)) == set(failing), (task_id, gap)


@pytest.mark.parametrize("rubric", ["code", "haiku", "summary"])
def test_regrading_a_demo_grades_its_final_answer_again(tmp_path, capsys, rubric):
    run_dir = tmp_path / "run"
    assert rubric_runner.run(["worker=scripted", "grader=scripted", f"rubric={rubric}"], run_dir).exit_code == 0
    cursors = sorted(p.read_text() for p in (run_dir / "scripted-cursors").rglob("*.tsv"))
    for _ in range(2):  # every regrade tells the same story: the run's own cursors are left as they were
        capsys.readouterr()
        assert run_command(["regrade", str(run_dir)]) == 0
        out = capsys.readouterr().out
        assert "-- grading pass 1\n" in out
        assert re.search(r"\n   grader called \w+ -> .*\n   verdict: satisfied - Graded again: ", out)
        lines = out.splitlines()
        assert "run/tasks/task-r0: satisfied" in lines
        # the answer's hidden check passed and the grader agreed: no error to count against it (and one
        # passing answer alone cannot rank a grader: balanced error needs failing answers too)
        ranking = "graders ranked by balanced error against hidden verification, on the same transcripts:"
        assert lines[lines.index(ranking) + 1].startswith(
            "  -. scripted:demo: balanced error -; false satisfied -; false rejection 0/1 (0.0%")
    assert sorted(p.read_text() for p in (run_dir / "scripted-cursors").rglob("*.tsv")) == cursors
    final = run_json(run_dir)["task"]["final_answer"]
    for regrade_dir in (run_dir / "regrades").iterdir():
        record = run_json(regrade_dir)
        assert (record["status"], record["task"]["iterations"]) == ("satisfied", 1)
        (tool_run,) = [e for e in read_events(regrade_dir) if e["event"] == "tool_call_start"]
        assert final.strip() in tool_run["input"].replace("\\n", "\n")  # the regrade checked the final answer
