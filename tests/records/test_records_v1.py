"""Run dirs written by schema version 1 (``tests/fixtures/v1``) are read as the current version's: the report
counts them, a regrade grades their transcripts again, a resume finishes an interrupted one and a follow-up
turn continues a run, each writing the one layout (``tasks/<id>-r<k>/``)."""

from __future__ import annotations

import json

import pytest
from fixtures import v1_run_dirs
from support.helpers import next_turn_overrides

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import (
    RunKind,
    Status,
    collect,
    load_record,
    load_task,
    read_task_at,
    recorded_sources,
)
from rubric_runner.report import expand


@pytest.fixture
def v1(tmp_path):
    return v1_run_dirs(tmp_path)


def test_every_v1_record_reads_as_a_run_or_a_task(v1):
    single = load_record(v1 / "single")
    assert (single.schema_version, single.status, single.header.kind) == (1, Status.SATISFIED, RunKind.RUN)
    assert single.inline_task.iterations == 2 and single.inline_task.final_answer.startswith("def find_duplicates")
    assert [(row.status, row.iterations) for row in single.tasks] == [(Status.SATISFIED, 2)]
    assert single.header.worker.model == "scripted:demo" and single.header.rubric.name == "code"
    assert single.header.sources.overrides[:2] == ["worker=scripted", "grader=scripted"]
    tasks = load_record(v1 / "tasks")
    assert tasks.inline_task is None and tasks.aggregate.runs == 3 and len(tasks.tasks) == 3
    assert tasks.aggregate.usage["worker"].calls > 0  # the run's summed usage, where version 1 kept it
    task = load_task(v1 / "tasks" / "tasks" / "flatten-r0")
    assert (task.task_id, task.repeat, task.status) == ("flatten", 0, Status.SATISFIED) and task.rubric
    turn = load_record(v1 / "single_turn" / "turns" / "2")
    assert (turn.header.kind, turn.header.turn, turn.inline_task.task) == (RunKind.TURN, 2, "Now add a docstring")
    (regrade_dir,) = (v1 / "single" / "regrades").iterdir()
    regraded = load_record(regrade_dir)
    assert regraded.header.kind is RunKind.REGRADE and regraded.header.regraded_from == str(v1 / "single")
    assert read_task_at(v1 / "interrupted").status is Status.INTERRUPTED


def test_report_reads_a_v1_sweep_and_run_dirs(v1, capsys):
    assert run_command(["report", str(v1 / "sweep")]) == 0
    assert "report: 2 runs: 2 satisfied; satisfied rate 100.0%" in capsys.readouterr().out
    assert run_command(["report", str(v1 / "tasks")]) == 0
    assert "report: 3 runs in 1 job: 3 satisfied" in capsys.readouterr().out
    runs = expand(collect(v1 / "single"))
    assert [(run.job.job, run.status.value, run.verified_final) for run in runs] == [(".", "satisfied", True)]


def test_the_config_sources_of_a_v1_run_are_what_hydra_saved(v1):
    sources = recorded_sources(v1 / "interrupted")
    assert f"worker.script={v1}/scripts/slow.yaml" in sources.overrides and sources.config_dirs == []


def test_regrade_grades_a_v1_run_and_its_tasks_again(v1, capsys):
    # the fixture keeps no scripted cursors: the grader's script starts at its top, a revision request
    assert run_command(["regrade", str(v1 / "tasks")]) == 1
    (out_dir,) = (v1 / "tasks" / "regrades").iterdir()
    record = load_record(out_dir)
    assert record.schema_version == 3 and record.aggregate.statuses == {"max_iterations_reached": 3}
    for name in ("find_duplicates-r0", "flatten-r0", "is_palindrome-r0"):
        regraded = load_task(out_dir / "tasks" / name)
        assert regraded.regraded_from == str(v1 / "tasks" / "tasks" / name)
        # the task's own test cases reached the grader's run_test_suite
        events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
        assert not [e for e in events if e["event"] == "tool_call_end" and "neither a suite nor cases" in e.get("output", "")]


def test_resume_finishes_an_interrupted_v1_run(v1):
    before = read_task_at(v1 / "interrupted")
    record = rubric_runner.resume(v1 / "interrupted")
    assert (record.status, record.schema_version, record.resumed) == (Status.SATISFIED, 3, 1)
    task = load_task(v1 / "interrupted" / "tasks" / "task-r0")
    assert [e.result for e in task.evaluations] == ["needs_revision", "satisfied"]
    assert (task.resumed, task.thread_id) == (1, before.thread_id)
    saved = json.loads((v1 / "interrupted" / "result.json").read_text())
    assert saved["schema_version"] == 3 and "task" not in saved and saved["tasks"][0]["status"] == "satisfied"
    assert not (v1 / "interrupted" / "transcript.json").exists()  # moved into the task's dir, then continued


def test_continue_of_a_v1_run_of_one_task(v1, tmp_path):
    overrides = next_turn_overrides(tmp_path / "next.yaml", "second turn")
    record = rubric_runner.continue_run(v1 / "single", "Now make it return nothing", overrides)
    assert (record.status, record.header.turn) == (Status.SATISFIED, 2)
    turn = read_task_at(v1 / "single" / "turns" / "2")
    assert (turn.thread_id, turn.task_id, turn.task) == (read_task_at(v1 / "single").thread_id, None, "Now make it return nothing")
    assert (v1 / "single" / "turns" / "2" / "tasks" / "task-r0" / "transcript.json").is_file()


def test_the_review_queue_lists_a_v1_run_of_one_task_and_a_task_set(v1):
    from rubric_runner.review.queue import items

    assert [(item.key, item.record.status) for item in items(v1 / "single")] == [(".", Status.SATISFIED)]
    assert [item.key for item in items(v1 / "tasks")] == [f"tasks/{name}-r0" for name in ("find_duplicates", "flatten", "is_palindrome")]
