"""Follow-up turns: `rubric-runner continue` on a finished run's thread, with scripted models and real agents."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from support.helpers import cli_process, run_json, scripted_overrides, verdict, write_script

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import collect
from rubric_runner.report import expand
from rubric_runner.report.stats import by_group
from rubric_runner.report.summary import run_row

MESSAGE = "Now add a docstring"
TASK = Path("tasks", "task-r0")
"""The dir of a run's task when the task is the rubric's own message."""
NEW_RUBRIC = "- The function has a docstring"


def _script(path: Path, second_grader: list[dict] | None = None) -> Path:
    """Turn 1: one answer, satisfied; turn 2 continues the same script: one answer, then ``second_grader``."""
    return write_script(
        path,
        worker=[{"content": "def f(): pass"}, {"content": 'def f():\n    """Do nothing."""'}],
        grader=[verdict("satisfied", ("c", True), explanation="first turn"),
                *(second_grader or [verdict("satisfied", ("c", True), explanation="second turn")])],
    )


def _first_run(tmp_path: Path, script: Path, *extra: str) -> Path:
    run_dir = tmp_path / "run"
    record = rubric_runner.run(scripted_overrides(script, *extra), run_dir=run_dir)
    assert record.status == "satisfied", record.error
    return run_dir


def _record(path: Path) -> dict:
    return run_json(path)


def _thread_state(run_dir: Path, thread_id: str) -> tuple[dict, dict]:
    """The thread's latest checkpoint in the run's SQLite file: its channel values and versions."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(run_dir / "checkpoints.sqlite") as connection:
        checkpoint = SqliteSaver(connection).get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}).checkpoint
    return checkpoint["channel_values"], checkpoint["channel_versions"]


def test_follow_up_with_the_same_rubric_carries_it_over_on_the_same_thread_in_a_new_record(tmp_path, capsys):
    run_dir = _first_run(tmp_path, _script(tmp_path / "s.yaml"))
    first_file = (run_dir / "result.json").read_bytes()
    first = _record(run_dir)
    _, versions_before = _thread_state(run_dir, first["task"]["thread_id"])

    assert run_command(["continue", str(run_dir), MESSAGE, "run.console=true"]) == 0
    turn_dir = run_dir / TASK / "turns" / "2"
    turn = _record(turn_dir)
    assert (run_dir / "result.json").read_bytes() == first_file  # nothing of the first turn is overwritten
    assert turn["status"] == "satisfied" and turn["header"]["turn"] == 2 and turn["header"]["continued_from"] == str(run_dir / TASK)
    assert turn["task"]["thread_id"] == first["task"]["thread_id"]
    assert turn["task"]["task"] == MESSAGE and turn["task"]["rubric"] == first["task"]["rubric"]
    assert turn["task"]["rubric_carried_over"] is True
    # RubricMiddleware starts a new grading run after a terminal verdict, even on the same rubric
    assert turn["task"]["grading_run_id"] and turn["task"]["grading_run_id"] != first["task"]["grading_run_id"]
    assert [e["explanation"] for e in turn["task"]["evaluations"]] == ["second turn"]
    assert {e["grading_run_id"] for e in turn["task"]["evaluations"]} == {turn["task"]["grading_run_id"]}
    assert turn["task"]["usage"]["worker"]["calls"] == 1 and turn["task"]["usage"]["grader"]["calls"] == 1
    assert turn["task"]["final_answer"].endswith('"""Do nothing."""')
    assert turn["task"]["attempts"] == [turn["task"]["final_answer"]], "a turn's record keeps only its own answers"

    values, versions_after = _thread_state(run_dir, first["task"]["thread_id"])
    assert versions_after["rubric"] == versions_before["rubric"]  # the rubric was not sent again
    assert values["rubric"] == first["task"]["rubric"]
    transcript = json.loads((turn_dir / TASK / "transcript.json").read_text())["messages"]
    contents = [m["data"]["content"] for m in transcript]
    assert contents.index("def f(): pass") < contents.index(MESSAGE)  # the earlier turn is on the thread
    out = capsys.readouterr().out
    assert f"turn 2, continuing {run_dir / TASK}; graded against the rubric carried over" in out

    jobs = collect(run_dir)
    assert [job.job for job in jobs] == [".", "tasks/task-r0/turns/2"]
    runs = expand(jobs)
    assert [run_row(run)["turn"] for run in runs] == [1, 2]
    assert [group.rubric for group in by_group(runs, {})] == ["haiku", "haiku (turn 2)"]


def test_follow_up_with_a_new_rubric_starts_a_new_grading_run_against_it(tmp_path):
    run_dir = _first_run(tmp_path, _script(tmp_path / "s.yaml"))
    first = _record(run_dir)
    _, versions_before = _thread_state(run_dir, first["task"]["thread_id"])

    assert run_command(["continue", str(run_dir), MESSAGE, f"rubric.text={NEW_RUBRIC}"]) == 0
    turn = _record(run_dir / TASK / "turns" / "2")
    assert turn["task"]["rubric"] == NEW_RUBRIC and turn["task"]["rubric_carried_over"] is False
    assert turn["task"]["grading_run_id"] != first["task"]["grading_run_id"] and turn["task"]["thread_id"] == first["task"]["thread_id"]
    values, versions_after = _thread_state(run_dir, first["task"]["thread_id"])
    assert versions_after["rubric"] != versions_before["rubric"]
    assert values["rubric"] == values["_active_rubric"] == NEW_RUBRIC
    assert values["_current_grading_run_id"] == turn["task"]["grading_run_id"]

    # a third turn carries the new rubric over from the second, and is numbered after it
    write_script(tmp_path / "s.yaml", worker=[{"content": "a"}, {"content": "b"}, {"content": "c"}],
                 grader=[verdict("satisfied", ("c", True))] * 3)
    assert run_command(["continue", str(run_dir), "And a test"]) == 0
    third = _record(run_dir / TASK / "turns" / "3")
    assert third["header"]["turn"] == 3 and third["header"]["continued_from"] == str(run_dir / TASK / "turns" / "2")
    assert third["task"]["rubric"] == NEW_RUBRIC and third["task"]["rubric_carried_over"] is True


def test_regrade_grades_every_turn_on_its_own_rubric(tmp_path):
    run_dir = _first_run(tmp_path, _script(tmp_path / "s.yaml"))
    assert run_command(["continue", str(run_dir), MESSAGE, f"rubric.text={NEW_RUBRIC}"]) == 0
    write_script(tmp_path / "s.yaml", worker=[], grader=[verdict("satisfied", ("c", True))] * 2)
    assert run_command(["regrade", str(run_dir)]) == 0
    (out_dir,) = (run_dir / "regrades").iterdir()
    regraded = _record(out_dir / TASK / "turns" / "2")
    assert regraded["header"]["turn"] == 2 and regraded["header"]["regraded_from"] == str(run_dir / TASK / "turns" / "2")
    assert regraded["task"]["rubric"] == NEW_RUBRIC and regraded["task"]["task"] == MESSAGE
    assert _record(out_dir)["task"]["task"] != MESSAGE


def test_a_multi_task_run_continues_one_task_by_id(tmp_path, capsys):
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text('{"id": "a", "task": "Task A"}\n{"id": "b", "task": "Task B"}\n', encoding="utf-8")
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "answer"}, {"content": "follow-up answer"}],
                          grader=[verdict("satisfied", ("c", True))] * 2)
    run_dir = _first_run(tmp_path, script, f"rubric.dataset={dataset}")

    assert run_command(["continue", str(run_dir), MESSAGE]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --task: ") and "name the task to continue, one of: a-r0, b-r0" in err
    assert run_command(["continue", "--task", "c", str(run_dir), MESSAGE]) == 2
    assert "no task 'c'" in capsys.readouterr().err

    assert run_command(["continue", str(run_dir), MESSAGE, "--task", "b"]) == 2
    assert capsys.readouterr().err.startswith("error: --task: options go before RUN_DIR")

    assert run_command(["continue", "--task", "b", str(run_dir), MESSAGE]) == 0
    task_dir = run_dir / "tasks" / "b-r0"
    turn = _record(task_dir / "turns" / "2")
    assert turn["task"]["task_id"] == "b" and turn["task"]["repeat"] == 0 and turn["task"]["thread_id"] == _record(task_dir)["thread_id"]
    assert turn["task"]["final_answer"] == "follow-up answer" and turn["status"] == "satisfied"
    assert not (run_dir / "tasks" / "a-r0" / "turns").exists()
    assert [job.job for job in collect(run_dir)] == [".", "tasks/b-r0/turns/2"]


def test_a_run_of_a_one_row_dataset_continues_its_one_task(tmp_path, capsys):
    """A dataset of one row is a single-task run: ``continue`` without ``--task`` takes its task, whose id is
    the row's (before, it looked for a task named ``task`` and said the run's tasks had none any more)."""
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text('{"id": "shout", "task": "Say hi loudly"}\n', encoding="utf-8")
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "HI"}, {"content": "hi"}, {"content": "hi!"}],
                          grader=[verdict("satisfied", ("c", True))] * 3)
    run_dir = _first_run(tmp_path, script, f"rubric.dataset={dataset}")
    assert run_command(["continue", str(run_dir), MESSAGE]) == 0
    task_dir = run_dir / "tasks" / "shout-r0"
    turn, first = _record(task_dir / "turns" / "2")["task"], _record(task_dir)
    assert (turn["status"], turn["task"], turn["final_answer"]) == ("satisfied", MESSAGE, "hi")
    assert (turn["thread_id"], turn["task_id"]) == (first["thread_id"], first["task_id"]) == (first["thread_id"], "shout")
    assert run_command(["continue", "--task", "shout", str(run_dir), "Again"]) == 0  # its id names it too
    third = _record(task_dir / "turns" / "3")["task"]
    assert (third["status"], third["task"], third["final_answer"], third["thread_id"]) == ("satisfied", "Again", "hi!", first["thread_id"])
    other = tmp_path / "two.jsonl"
    other.write_text('{"id": "a", "task": "A"}\n{"id": "b", "task": "B"}\n', encoding="utf-8")
    assert run_command(["continue", str(run_dir), MESSAGE, f"rubric.dataset={other}"]) == 2
    assert "error: --task: the run's tasks have no 'shout' any more (continue with the config the run had)" in \
        capsys.readouterr().err


def test_continue_refuses_what_it_cannot_continue(tmp_path, capsys):
    script = _script(tmp_path / "s.yaml")
    memory_dir = tmp_path / "memory"
    rubric_runner.run(scripted_overrides(script, "run.checkpointer=memory"), run_dir=memory_dir)
    assert run_command(["continue", str(memory_dir), MESSAGE]) == 2
    assert "error: run.checkpointer: memory checkpoints end with their run" in capsys.readouterr().err
    assert _record(memory_dir / TASK / "turns" / "2")["error"]["key"] == "run.checkpointer"

    run_dir = _first_run(tmp_path, script)
    with pytest.raises(SystemExit) as exit_info:
        run_command(["continue", str(run_dir)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MESSAGE" in err[0]


SLOW = 2.0


def test_interrupt_during_a_follow_up_then_resume(tmp_path, capsys):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "draft"}, {"content": "slow revision", "latency": SLOW}, {"content": "final"}],
        grader=[verdict("satisfied", ("c", True)), verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))],
    )
    run_dir = _first_run(tmp_path, script)
    first_file = (run_dir / "result.json").read_bytes()
    turn_dir = run_dir / TASK / "turns" / "2"
    with cli_process("continue", str(run_dir), MESSAGE, cwd=tmp_path) as proc:
        deadline = time.monotonic() + 60
        while not (turn_dir / "events.jsonl").is_file() or "model_call_start" not in (turn_dir / "events.jsonl").read_text():
            assert time.monotonic() < deadline, "the follow-up never called the worker"
            time.sleep(0.05)
        time.sleep(0.3)  # inside the slow worker call
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert _record(turn_dir)["status"] == "interrupted"
    assert _record(turn_dir)["task"]["evaluations"] == []  # the first turn's verdict is not this turn's

    capsys.readouterr()
    assert run_command(["continue", str(run_dir), "Another message"]) == 2
    assert f"resume it first: rubric-runner resume {turn_dir}" in capsys.readouterr().err

    assert run_command(["resume", str(turn_dir)]) == 0
    turn = _record(turn_dir)
    assert turn["status"] == "satisfied" and turn["resumed"] == 1 and turn["header"]["turn"] == 2
    assert [e["result"] for e in turn["task"]["evaluations"]] == ["needs_revision", "satisfied"]
    # every scripted reply of the turn was used once: the finished worker call was not repeated
    assert turn["task"]["usage"]["worker"]["calls"] == 2 and turn["task"]["usage"]["grader"]["calls"] == 2
    assert turn["task"]["final_answer"] == "final"
    assert (run_dir / "result.json").read_bytes() == first_file


def test_a_turn_keeps_only_its_own_graded_answers():
    from langchain_core.messages import AIMessage, HumanMessage

    from rubric_runner.loop.answers import graded_attempts

    def revise():
        return HumanMessage("revise", name="rubric_grader")

    first = [HumanMessage("task"), AIMessage("draft"), revise(), AIMessage("final 1")]
    second = [HumanMessage(MESSAGE), AIMessage("turn 2 draft"), revise(), AIMessage("turn 2 final")]
    assert graded_attempts(first) == ["draft", "final 1"]
    assert graded_attempts(first + second) == ["turn 2 draft", "turn 2 final"]
