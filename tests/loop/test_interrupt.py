"""SIGINT / SIGTERM mid-run in a real subprocess, then resume from the SQLite checkpoint (with
``rubric-runner resume``, or from Python with ``run.resume=true``)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from support.helpers import (
    SCRIPTED_EVIDENCE,
    cli_process,
    run_cli,
    run_json,
    task_json,
    verdict,
    write_script,
)

import rubric_runner

SLOW_CODE = "import time\ntime.sleep(2)\n"
GOOD_CODE = "def find_duplicates(lst):\n    seen, dups = [], []\n    for x in lst:\n        if x in seen and x not in dups:\n            dups.append(x)\n        seen.append(x)\n    return dups\n"
CRITERIA = ("All tests pass in run_test_suite",)


def _script(path: Path, verdict_latency: float = 0) -> Path:
    """The slow ``code`` story; ``verdict_latency``: how long its last verdict takes, after the resumed step."""
    return write_script(
        path,
        worker=[{"content": SLOW_CODE, "latency": 2}, {"content": GOOD_CODE}],
        grader=[
            {"tool_calls": [{"name": "run_test_suite", "args": {"code": SLOW_CODE}}]},
            {**verdict("needs_revision", (CRITERIA[0], False)), "latency": 2},
            {"tool_calls": [{"name": "run_test_suite", "args": {"code": GOOD_CODE}}]},
            {**verdict("satisfied", (CRITERIA[0], True)), "latency": verdict_latency},
        ],
    )


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait_for(run_dir: Path, event: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["event"] == event for e in _events(run_dir)):
            return
        time.sleep(0.05)
    raise AssertionError(f"{event} never appeared in {run_dir}/events.jsonl")


def _slow_run(tmp_path: Path, verdict_latency: float = 0) -> tuple[list[str], Path]:
    """The slow ``code`` run's overrides and its run dir."""
    script = _script(tmp_path / "script.yaml", verdict_latency)
    run_dir = tmp_path / "run"
    args = [
        "worker=scripted", "grader=scripted", "rubric=code", f"worker.script={script}",
        f"grader.script={script}", f"hydra.run.dir={run_dir}",
    ]
    return args, run_dir


@pytest.mark.parametrize(
    ("point", "after_event", "signum"),
    [
        ("worker call", "model_call_start", signal.SIGINT),
        ("tool call", "tool_call_start", signal.SIGINT),
        ("grader call", "tool_call_end", signal.SIGTERM),
    ],
)
def test_interrupt_then_resume(tmp_path, point, after_event, signum):
    args, run_dir = _slow_run(tmp_path)
    with cli_process(*args, cwd=tmp_path) as proc:
        _wait_for(run_dir, after_event)
        time.sleep(0.3)  # inside the slow call now
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (point, out, err)
    record = run_json(run_dir)
    assert record["status"] == "interrupted" and record["exit_code"] == 130
    assert _events(run_dir)[-1]["event"] == "run_end"

    resumed = rubric_runner.resume(run_dir)
    assert resumed.exit_code == 0, (point, resumed.error)
    record = run_json(run_dir)
    assert record["status"] == "satisfied" and record["resumed"] == 1
    # every scripted turn was used exactly once: no completed call or grading pass was repeated
    assert record["task"]["usage"]["worker"]["calls"] == 2
    assert record["task"]["usage"]["grader"]["calls"] == 4
    assert [e["iteration"] for e in record["task"]["evaluations"]] == [0, 1]
    assert [e["result"] for e in record["task"]["evaluations"]] == ["needs_revision", "satisfied"]


def test_resuming_a_complete_run_changes_nothing(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    run_dir = tmp_path / "run"
    args = ["worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}"]
    assert rubric_runner.run(args, run_dir).exit_code == 0
    before = task_json(run_dir)
    again = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert again.returncode == 0 and "already complete: satisfied" in again.stdout
    assert task_json(run_dir) == before  # the task is kept as it was; the run's record counts it reused
    assert run_json(run_dir)["aggregate"]["reused"] == 1


def test_second_signal_stops_at_once_and_resume_redoes_the_step(tmp_path):
    args, run_dir = _slow_run(tmp_path)
    with cli_process(*args, cwd=tmp_path) as proc:
        _wait_for(run_dir, "model_call_start")
        time.sleep(0.3)  # inside the 2 s worker call
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGINT)
        started = time.monotonic()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert time.monotonic() - started < 1.0  # did not wait for the worker call to finish
    record = run_json(run_dir)
    assert record["status"] == "interrupted" and "twice" in record["error"]["message"]
    assert "stopping at the next checkpoint" in out

    resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    record = run_json(run_dir)
    assert record["status"] == "satisfied"
    assert [e["result"] for e in record["task"]["evaluations"]] == ["needs_revision", "satisfied"]


def _interrupted(tmp_path: Path, signum: int, verdict_latency: float = 0) -> tuple[list[str], Path]:
    """The slow run stopped by ``signum`` inside its first worker call."""
    args, run_dir = _slow_run(tmp_path, verdict_latency)
    with cli_process(*args, cwd=tmp_path) as proc:
        _wait_for(run_dir, "model_call_start")
        time.sleep(0.3)
        os.kill(proc.pid, signum)
        proc.communicate(timeout=60)
    return args, run_dir


def test_a_second_resume_while_one_works_is_refused_naming_the_first(tmp_path):
    # the resume's last verdict takes 30 s; the second command starts once that verdict is under way (both
    # test-suite runs have ended), so however slowly it starts under load it finds the first holding the run
    _, run_dir = _interrupted(tmp_path, signal.SIGINT, verdict_latency=30)
    started_at = len(_events(run_dir))
    with cli_process("resume", str(run_dir), cwd=tmp_path) as first:
        deadline = time.monotonic() + 60
        while sum(e["event"] == "tool_call_end" for e in _events(run_dir)[started_at:]) < 2:
            assert time.monotonic() < deadline and first.poll() is None, "the resume never reached its last verdict"
            time.sleep(0.05)
        second = run_cli("resume", str(run_dir), cwd=tmp_path)
        out, err = first.communicate(timeout=120)
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr.startswith(f"error: RUN_DIR: {run_dir} is in use by pid {first.pid} on "), second.stderr
    assert len(second.stderr.splitlines()) == 1
    assert first.returncode == 0, out + err
    record = run_json(run_dir)
    assert record["status"] == "satisfied" and record["resumed"] == 1 and record["task"]["final_answer"] == GOOD_CODE


def test_a_killed_runs_lock_is_taken_over_by_its_resume(tmp_path):
    _, run_dir = _interrupted(tmp_path, signal.SIGKILL)
    holder = json.loads((run_dir / ".lock").read_text())
    assert run_json(run_dir)["status"] == "running"  # it never wrote its end
    with pytest.raises(ProcessLookupError):
        os.kill(holder["pid"], 0)
    resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    record = run_json(run_dir)
    assert record["status"] == "satisfied" and record["task"]["usage"]["worker"]["calls"] == 2
    assert json.loads((run_dir / ".lock").read_text())["pid"] != holder["pid"]


def test_ctrl_c_in_a_regrade_stops_it_recording_the_ungraded_transcripts_interrupted(tmp_path):
    from support.helpers import run_scripted, write_dataset

    ids = ["t1", "t2", "t3", "t4"]
    fast = write_script(tmp_path / "fast.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    _, run_dir = run_scripted(tmp_path, fast, f"rubric.dataset={write_dataset(tmp_path / 'tasks.jsonl', ids)}")
    slow = write_script(tmp_path / "slow.yaml", worker=[], grader=[{**verdict("satisfied", ("c", True)), "latency": 1.5}])
    with cli_process("regrade", str(run_dir), f"grader.script={slow}", cwd=tmp_path) as proc:
        deadline = time.monotonic() + 60
        while not [e for path in run_dir.glob("regrades/*") for e in _events(path) if e["event"] == "regrade_end"]:
            assert time.monotonic() < deadline, "no transcript was regraded"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    (regrade_dir,) = run_dir.glob("regrades/*")
    statuses = {path.parent.name: json.loads(path.read_text())["status"] for path in regrade_dir.glob("tasks/*/result.json")}
    assert len(statuses) == 4 and statuses["t1-r0"] == "satisfied" and statuses["t4-r0"] == "interrupted", statuses
    record = run_json(regrade_dir)
    assert (record["status"], record["exit_code"]) == ("interrupted", 130)
    assert "partial:" in out, out


def test_ctrl_c_in_a_follow_up_turn_records_the_turn_interrupted(tmp_path):
    from support.helpers import run_scripted

    answer = [verdict("satisfied", ("c", True))]
    _, run_dir = run_scripted(tmp_path, write_script(tmp_path / "fast.yaml", worker=[{"content": "x"}], grader=answer))
    slow = write_script(tmp_path / "slow.yaml", worker=[{"content": "x"}, {"content": "y", "latency": 4}], grader=answer)
    with cli_process("continue", str(run_dir), "more, please", f"worker.script={slow}", cwd=tmp_path) as proc:
        _wait_for(run_dir / "tasks" / "task-r0" / "turns" / "2", "model_call_start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    record = run_json(run_dir / "tasks" / "task-r0" / "turns" / "2")
    assert (record["status"], record["error"]["message"]) == ("interrupted", "SIGINT: stopped at a checkpoint")
    assert run_json(run_dir)["status"] == "satisfied"  # the turn before is as it was


def test_ctrl_c_stops_the_review_page_with_exit_130(tmp_path):
    from support.helpers import run_scripted

    _, run_dir = run_scripted(tmp_path, write_script(tmp_path / "s.yaml", worker=[{"content": "x"}],
                                                     grader=[verdict("satisfied", ("c", True))]))
    with cli_process("review", "--port", "0", str(run_dir), cwd=tmp_path) as proc:
        assert proc.stdout.readline().startswith("review page: http://127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
