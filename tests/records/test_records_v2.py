"""Run dirs written by schema version 2 (``tests/fixtures/v2``), whose run of one task kept the task's record
inline, read as version 3's run of one task: the report counts them, a regrade, a resume and a follow-up turn
write the one layout (``tasks/<id>-r<k>/``) beside what they read."""

from __future__ import annotations

import json
import sqlite3

import pytest
from fixtures import fixture_dirs
from support.helpers import next_turn_overrides, run_cli

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import RunKind, Status, collect, load_record, load_task, read_task_at
from rubric_runner.report import expand


@pytest.fixture
def v2(tmp_path):
    return fixture_dirs("v2", tmp_path)


def test_a_v2_run_of_one_task_reads_as_a_run_of_one_task_whose_dir_is_the_run_dir(v2):
    single = load_record(v2 / "single")
    assert (single.schema_version, single.status, single.header.kind) == (2, Status.SATISFIED, RunKind.RUN)
    assert single.inline_task.iterations == 2 and single.inline_task.final_answer.startswith("def find_duplicates")
    assert [(row.task_id, row.repeat, row.status) for row in single.tasks] == [(None, None, Status.SATISFIED)]
    assert (single.aggregate.runs, single.aggregate.satisfied, single.grading_passes()) == (1, 1, 2)
    assert read_task_at(v2 / "single").thread_id == single.inline_task.thread_id
    tasks = load_record(v2 / "tasks")
    assert tasks.inline_task is None and tasks.aggregate.runs == 3 and len(tasks.tasks) == 3
    turn = read_task_at(v2 / "single_turn" / "turns" / "2")
    assert (turn.task, turn.status) == ("Now add a docstring", Status.SATISFIED)
    assert read_task_at(v2 / "interrupted").status is Status.INTERRUPTED


def test_report_reads_a_v2_sweep_task_set_and_run_of_one_task(v2, capsys):
    assert run_command(["report", str(v2 / "sweep")]) == 0
    assert "report: 2 runs: 2 satisfied; satisfied rate 100.0%" in capsys.readouterr().out
    assert run_command(["report", str(v2 / "tasks")]) == 0
    assert "report: 3 runs in 1 job: 3 satisfied" in capsys.readouterr().out
    runs = expand(collect(v2 / "single_turn"))
    assert [(run.job.job, run.status.value, run.turn) for run in runs] == [(".", "satisfied", 1), ("turns/2", "satisfied", 2)]


def test_regrade_of_a_v2_run_of_one_task_writes_its_task_dir(v2):
    regrade = rubric_runner.regrade(v2 / "single")
    (record,) = regrade.records
    assert record.schema_version == 3 and [(row.task_id, row.repeat) for row in record.tasks] == [(None, 0)]
    regraded = load_task(regrade.dir / "tasks" / "task-r0")
    assert regraded.regraded_from == str(v2 / "single") and regraded.status in (Status.SATISFIED, Status.MAX_ITERATIONS_REACHED)


def test_resume_finishes_an_interrupted_v2_run_in_the_one_layout(v2):
    before = load_record(v2 / "interrupted").inline_task
    record = rubric_runner.resume(v2 / "interrupted")
    assert (record.status, record.schema_version) == (Status.SATISFIED, 3)
    task = load_task(v2 / "interrupted" / "tasks" / "task-r0")
    assert (task.resumed, task.thread_id) == (1, before.thread_id)
    assert [e.result for e in task.evaluations] == ["needs_revision", "satisfied"]
    saved = json.loads((v2 / "interrupted" / "result.json").read_text())
    assert saved["schema_version"] == 3 and "task" not in saved and saved["tasks"][0]["status"] == "satisfied"
    assert not (v2 / "interrupted" / "transcript.json").exists()  # moved into the task's dir, then continued


def test_continue_of_a_v2_run_of_one_task_and_of_its_turn(v2, tmp_path):
    overrides = next_turn_overrides(tmp_path / "third.yaml", "third turn")
    record = rubric_runner.continue_run(v2 / "single_turn", "Now make it return nothing", overrides)
    assert (record.status, record.header.turn) == (Status.SATISFIED, 3)
    turn = read_task_at(v2 / "single_turn" / "turns" / "3")
    first = read_task_at(v2 / "single_turn")
    assert (turn.thread_id, turn.task_id, turn.repeat) == (first.thread_id, None, 0)
    assert (v2 / "single_turn" / "turns" / "3" / "tasks" / "task-r0" / "transcript.json").is_file()


def test_a_finished_v2_run_with_a_turn_resumed_keeps_the_turn_below_its_task_and_continues_after_it(v2, tmp_path):
    run_dir = v2 / "single_turn"
    first = read_task_at(run_dir)
    assert rubric_runner.resume(run_dir).status is Status.SATISFIED  # nothing left to do: laid out anew
    task_dir = run_dir / "tasks" / "task-r0"
    assert not (run_dir / "turns").exists() and read_task_at(task_dir / "turns" / "2").status is Status.SATISFIED
    overrides = next_turn_overrides(tmp_path / "third.yaml", "third turn")
    record = rubric_runner.continue_run(run_dir, "Now make it return nothing", overrides)
    assert (record.status, record.header.turn, record.run_dir) == (Status.SATISFIED, 3, str(task_dir / "turns" / "3"))
    assert read_task_at(task_dir / "turns" / "3").thread_id == first.thread_id


def test_the_review_queue_lists_a_v2_run_of_one_task_and_a_task_set(v2):
    from rubric_runner.review.queue import items

    assert [(item.key, item.record.status) for item in items(v2 / "single")] == [(".", Status.SATISFIED)]
    assert [item.key for item in items(v2 / "tasks")] == [f"tasks/{name}-r0" for name in ("find_duplicates", "flatten", "is_palindrome")]


def test_a_finished_v2_sweep_resumed_keeps_its_tasks_in_the_one_layout_and_counts_their_spend_once(v2, tmp_path):
    sweep = v2 / "sweep"
    spent = {job: load_record(sweep / job).inline_task.tokens() for job in ("0", "1")}
    with sqlite3.connect(sweep / "spend.sqlite") as ledger:  # version 2 booked a run of one task under its job dir
        ledger.execute("CREATE TABLE spend (task TEXT PRIMARY KEY, tokens INTEGER NOT NULL, usd REAL)")
        ledger.executemany("INSERT INTO spend VALUES (?, ?, NULL)", spent.items())
    proc = run_cli("-m", "worker=scripted", "grader=scripted", "rubric=code", "grader.max_iterations=2,3",
                   f"hydra.sweep.dir={sweep}", "run.resume=true", "sweep.budget_tokens=1000000", "run.console=false",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(sweep / "spend.sqlite") as ledger:
        rows = dict(ledger.execute("SELECT task, tokens FROM spend").fetchall())
    assert rows == {f"{job}/tasks/task-r0": tokens for job, tokens in spent.items()}
    summary = [json.loads(line) for line in (sweep / "summary.jsonl").read_text().splitlines()]
    assert [(row["satisfied"], row["crashed"], row["reused"]) for row in summary] == [(1, 0, 1)] * 2
    for job in ("0", "1"):
        assert load_record(sweep / job).budgets[-1].spent_tokens == sum(spent.values())
        assert load_task(sweep / job / "tasks" / "task-r0").status is Status.SATISFIED
        assert (sweep / job / "tasks" / "task-r0" / "transcript.json").is_file()
        assert not (sweep / job / "transcript.json").exists()
