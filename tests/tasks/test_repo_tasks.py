"""rubric=repo_tasks offline: real file edits by the worker (and by its subagent), a grader that reads them
and runs the tests, hidden tests on every attempt's files, a tampered attempt caught, an offloaded tool
output read back, a refactor that lost a behaviour, a feature without its tests, the worker's own
``execute`` test runs."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml
from support.helpers import cli_process, read_events, run_cli, run_in_process, task_dir_of, task_json

from rubric_runner.cli import run_command
from rubric_runner.compat.deepagents import OFFLOADED
from rubric_runner.loop.mirror import dir_files
from rubric_runner.loop.workspaces import files_at, kept_seed
from rubric_runner.records import read_task_at

DEMO = ("rubric=repo_tasks", "worker=scripted", "grader=scripted")
TASKS = ("add_feature", "delegate_fix", "fix_median", "long_log", "protected_test", "refactor_prices", "run_own_tests",
         "write_report")


def _record(run_dir: Path, task: str, repeat: int = 0) -> dict:
    return json.loads((run_dir / "tasks" / f"{task}-r{repeat}" / "result.json").read_text())


def _grader_calls(run_dir: Path, task: str | None, agent: str = "grader") -> list[tuple[str, str, str]]:
    """``agent``'s tool calls in ``task`` (a run of one task's: None): (tool, input, output or error)."""
    events = [e for e in read_events(run_dir) if e.get("task_id") == task and e.get("agent") == agent]
    starts = [e for e in events if e["event"] == "tool_call_start"]
    ends = [e for e in events if e["event"] in ("tool_call_end", "tool_call_error")]
    return [(start["tool"], start["input"], end.get("output", end.get("error"))) for start, end in zip(starts, ends, strict=True)]


def test_repo_tasks_offline(tmp_path):
    result, run_dir = run_in_process(tmp_path, *DEMO)
    assert result.aggregate.statuses == {"satisfied": 8}
    for task in TASKS:
        record = _record(run_dir, task)
        assert [w["attempt"] for w in record["workspaces"]] == list(range(1, record["iterations"] + 1)), task
        for kept in record["workspaces"]:
            assert (run_dir / "tasks" / f"{task}-r0" / kept["diff"]).stat().st_size == kept["diff_bytes"] > 0, task
        assert record["verification"]["final"]["outcome"] == "passed", task
        if record["iterations"] > 1:  # the first attempt was wrong, and its hidden tests say so
            assert record["verification"]["first"]["outcome"] == "failed", task

    tampered = _record(run_dir, "protected_test")
    first, second = tampered["verified_attempts"]
    assert first["tampered"] == ["/tests/test_slug.py"] and second.get("tampered") is None
    assert {check["tool"]: check["outcome"] for check in first["verification"]["checks"]} == {
        "workspace_tests": "failed", "protected_files": "failed"}
    assert tampered["workspaces"][0]["tampered"] == ["/tests/test_slug.py"] and "tampered" not in tampered["final_workspace"]
    calls = _grader_calls(run_dir, "protected_test")
    assert [name for name, _, _ in calls] == ["run_tests", "read_file", "run_tests", "read_file"]
    assert calls[0][2].startswith("ok: false (exit code 1;")  # the task's own test, put back, fails the unfixed code
    assert '== "--hello---world-"' in calls[1][2]  # and the grader reads what the worker did to it
    assert calls[2][2].startswith("ok: true (exit code 0;")

    calls = _grader_calls(run_dir, "fix_median")
    assert [name for name, _, _ in calls] == ["run_tests", "read_file", "run_tests"]
    assert calls[0][2].startswith("ok: false") and calls[2][2].startswith("ok: true")
    assert "return (ordered[len(ordered) // 2 - 1]" in calls[1][2]
    report = _grader_calls(run_dir, "write_report")
    assert "## Risks" not in report[0][2] and "## Risks" in report[1][2]

    worker = json.loads((run_dir / "tasks" / "long_log-r0" / "transcript.json").read_text())["messages"]
    moved = [found.group(1) for m in worker if m["type"] == "tool" for found in [OFFLOADED.search(str(m["data"]["content"]))] if found]
    assert moved == ["/large_tool_results/call_0_0"]
    calls = _grader_calls(run_dir, "long_log")
    assert [(name, "/large_tool_results" in given) for name, given, _ in calls] == [("grep", True), ("read_file", True), ("run_tests", False)]
    assert "test_value_with_equals FAILED" in calls[1][2]

    refactor = _record(run_dir, "refactor_prices")  # the tests pass, but the refactor lost the range check
    assert [a["verification"]["outcome"] for a in refactor["verified_attempts"]] == ["failed", "passed"]
    calls = _grader_calls(run_dir, "refactor_prices")
    assert [name for name, _, _ in calls] == ["run_tests", "read_file"] * 2 and calls[0][2].startswith("ok: true")
    assert "raise ValueError" not in calls[1][2] and "raise ValueError" in calls[3][2]

    feature = _record(run_dir, "add_feature")  # the feature without its tests, then with them
    assert [w["changed"] for w in feature["workspaces"]] == [["/todo.py"], ["/tests/test_pending.py", "/todo.py"]]
    assert [a["verification"]["outcome"] for a in feature["verified_attempts"]] == ["failed", "passed"]
    calls = _grader_calls(run_dir, "add_feature")
    assert calls[1][:2] == ("glob", "{'pattern': '*.py', 'path': '/tests'}") and calls[1][2] == "/tests/test_todo.py"
    assert "def test_pending_keeps_the_order_added" in calls[3][2]

    delegated = _record(run_dir, "delegate_fix")  # the fixer subagent's edit is the task's one change
    assert delegated["workspaces"][0]["changed"] == ["/roman.py"] and delegated["evaluations"][0]["view"]["subagents"] == ["fixer"]
    assert [name for name, _, _ in _grader_calls(run_dir, "delegate_fix", "subagent:fixer")] == ["read_file", "edit_file"]
    assert [name for name, _, _ in _grader_calls(run_dir, "delegate_fix", "worker")] == ["task"]

    own = _grader_calls(run_dir, "run_own_tests", "worker")  # on state, the library has no execute to offer
    assert [name for name, _, _ in own] == ["execute", "edit_file", "execute"]
    assert all(out.startswith("Error: Execution not available") for name, _, out in own if name == "execute")

    assert (run_dir / "report.md").is_file() and "**tampered**: /tests/test_slug.py" in (run_dir / "report.md").read_text()


def _final_workspaces(run_dir: Path) -> dict[str, dict[str, str]]:
    found = {}
    for task in TASKS:
        seed = kept_seed(run_dir, _record(run_dir, task)["workspace_seed"], task)
        for repeat in (0, 1):
            found[f"{task}-r{repeat}"] = files_at(run_dir / "tasks" / f"{task}-r{repeat}", "final", seed)
    return found


KILLED = ("run.console=false", "run.repeats=2", "run.concurrency=2")


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory) -> Path:
    """The run the killed ones are compared with: on ``state``, whose records the disk backends' match."""
    home = tmp_path_factory.mktemp("whole")
    assert run_cli(*DEMO, *KILLED, "hydra.run.dir=run", cwd=home, timeout=300).returncode == 0
    return home / "run"


@pytest.mark.parametrize("backend", ["state", "sandbox"])
def test_a_run_killed_mid_task_resumes_to_the_same_workspaces(tmp_path, whole_run, backend):
    """Killed once a grader's tool call has ended, with tasks under way, then resumed: each task's final files and
    kept attempts are those of a run never killed; on a disk backend its ``files/`` dir holds its final files.
    (``sandbox`` is ``filesystem``'s file tools with commands; the stops below kill ``filesystem`` runs.)"""
    run_dir = tmp_path / "killed"
    with cli_process(*DEMO, *KILLED, f"worker.backend={backend}", f"hydra.run.dir={run_dir}", cwd=tmp_path) as proc:
        deadline = time.monotonic() + 120
        while not any(e["event"] == "tool_call_end" and e.get("agent") == "grader" for e in _events(run_dir)):
            assert time.monotonic() < deadline and proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert any(_task_status(run_dir, key) != "satisfied" for key in _keys())  # killed with a task under way
    resumed = run_cli("resume", str(run_dir), cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    finals = _final_workspaces(run_dir)
    assert finals == _final_workspaces(whole_run)
    for key in _keys():
        for name in ("attempt-1", "attempt-2", "final"):
            kept = [run / "tasks" / key / "workspace" / name / "changes.json" for run in (whole_run, run_dir)]
            assert kept[0].exists() == kept[1].exists() and (not kept[0].exists() or kept[0].read_bytes() == kept[1].read_bytes()), (key, name)
        if backend != "state":
            files = {path: raw.decode() for path, raw in dir_files(run_dir / "tasks" / key / "files").items()}
            assert files == finals[key], key


def _keys() -> list[str]:
    return [f"{task}-r{repeat}" for task in TASKS for repeat in (0, 1)]


def _task_status(run_dir: Path, key: str) -> str | None:
    path = run_dir / "tasks" / key / "result.json"
    return json.loads(path.read_text()).get("status") if path.exists() else None


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] if path.exists() else []


def _outcomes(run_dir: Path) -> dict[str, tuple]:
    """What each task's record says of its workspaces: status, each attempt's changed and tampered paths,
    the final files' changes, and the hidden checks' outcomes."""
    found = {}
    for task in TASKS:
        record = _record(run_dir, task)
        found[task] = (record["status"], [(w["changed"], w.get("tampered")) for w in record["workspaces"]],
                       record["final_workspace"]["changed"],
                       [a["verification"]["outcome"] for a in record["verified_attempts"]])
    return found


@pytest.mark.slow  # the eight bundled repos, each run on three backends
def test_the_disk_backends_seed_keep_and_grade_the_same_workspaces_as_state(tmp_path):
    """``worker.backend=filesystem`` and ``sandbox``: the seed written into the task's ``files/`` dir, the
    grader reading that dir, the kept attempts beside it in ``workspace/``; the records read as on ``state``."""
    runs = {backend: run_in_process(tmp_path / backend, *DEMO, f"worker.backend={backend}")
            for backend in ("state", "filesystem", "sandbox")}
    expected = _outcomes(runs["state"][1])
    assert all(status == "satisfied" for status, *_ in expected.values())
    for backend in ("filesystem", "sandbox"):
        result, run_dir = runs[backend]
        assert result.aggregate.statuses == {"satisfied": 8}, backend
        assert _outcomes(run_dir) == expected, backend
        fixed = run_dir / "tasks" / "fix_median-r0"
        assert (fixed / "files" / "stats.py").read_text() == files_at(fixed, "final", kept_seed(
            run_dir, _record(run_dir, "fix_median")["workspace_seed"], "fix_median"))["/stats.py"]
        assert not (fixed / "files" / "attempt-1").exists() and (fixed / "workspace" / "attempt-1" / "changes.json").is_file()
    assert not (runs["state"][1] / "tasks" / "fix_median-r0" / "files").exists()
    runs_own = [out for name, _, out in _grader_calls(runs["sandbox"][1], "run_own_tests", "worker") if name == "execute"]
    assert "AssertionError: assert 3 == 4" in runs_own[0] and "2 passed" in runs_own[1]  # the worker's own runs, in the sandbox
    assert runs_own[1].endswith("[Command succeeded with exit code 0]")


REGRADER = {"tasks": {"fix_median": {"grader": [
    {"tool_calls": [{"name": "read_file", "args": {"file_path": "/stats.py"}}]},
    {"tool_calls": [{"name": "run_tests", "args": {}}]},
    {"tool_calls": [{"name": "GraderResponse", "args": {"result": "satisfied", "explanation": "The tests pass.", "criteria": [
        {"name": "The task's tests pass in run_tests", "passed": True},
        {"name": "The fix is in stats.py and the tests are unchanged", "passed": True}]}}]},
]}}}


@pytest.mark.parametrize("backend", ["state", "filesystem"])
def test_a_regrade_grader_reads_and_tests_the_saved_workspace(tmp_path, backend):
    """A regrade's grader, with no worker left, reads the files the run's last pass read and runs the tests
    on them: the run's final fix, on either backend the run's worker had."""
    result, run_dir = run_in_process(tmp_path, *DEMO, "rubric.tasks=[fix_median]", f"worker.backend={backend}")
    assert result.status.value == "satisfied"
    script = tmp_path / "regrader.yaml"
    script.write_text(yaml.safe_dump({"grader": [], **REGRADER}), encoding="utf-8")
    assert run_command(["regrade", str(run_dir), f"grader.script={script}", "run.console=false"]) == 0
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    calls = _grader_calls(regrade_dir, "fix_median")
    assert [name for name, _, _ in calls] == ["read_file", "run_tests"]
    assert "if len(ordered) % 2:" in calls[0][2] and calls[1][2].startswith("ok: true (exit code 0;")
    record = read_task_at(regrade_dir)
    assert record.status.value == "satisfied" and [w.changed for w in record.workspaces] == [["/stats.py"]]


CRASH = '''"""A worker tool that leaves the workspace ahead of the last checkpoint and stops its process at once (a
kill, or Ctrl-C twice), the first time it is called."""

import os
import signal
import time
from pathlib import Path

from langchain_core.tools import tool

from rubric_runner.context import current_task

CRASHED = Path(__file__).with_name("crashed")


@tool
def crash() -> str:
    """Crash the run, the first time."""
    if not CRASHED.exists():
        CRASHED.touch()
        files = Path(current_task().files_dir)
        for path in files.rglob("*.py"):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut off mid-write
        (files / "stray.txt").write_text("written after the last checkpoint")
        for stop in SIGNALS:
            os.kill(os.getpid(), stop)
            time.sleep(0.5)
        time.sleep(60)
    return "carried on"
'''
MAKES_FILES = {"tool_calls": [{"name": "execute", "args": {"command": r"mkdir -p build && echo ok > build/log.txt && printf 'caf\351' > build/latin.bin"}}]}


def _crashing_script(task: str, agent: str, at: int, first: dict | None) -> dict:
    """The bundled script, with a ``crash`` call as ``agent``'s reply ``at`` in ``task``'s story (after ``first``,
    a reply put first)."""
    script = yaml.safe_load((Path(run_command.__code__.co_filename).parents[1] / "data" / "scripts" / "repo_tasks.yaml").read_text())
    story = script["tasks"][task]
    replies = ([first] if first else []) + story[agent]
    story[agent] = [*replies[:at], {"tool_calls": [{"name": "crash", "args": {}}]}, *replies[at:]]
    return script


def _kept(run_dir: Path) -> dict[str, bytes]:
    """A run of one task's kept workspaces (``changes.json`` of each attempt and the final files) and its files dir."""
    task_dir = task_dir_of(run_dir)
    kept = {f"workspace/{path.parent.name}": path.read_bytes() for path in sorted((task_dir / "workspace").glob("*/changes.json"))}
    return {**kept, **{f"files{path}": raw for path, raw in dir_files(task_dir / "files").items()}}


@pytest.mark.parametrize(("backend", "task", "agent", "at", "first", "stop"), [
    # after a command wrote files (one not UTF-8) and an edit
    ("sandbox", "run_own_tests", "worker", 3, MAKES_FILES, ("SIGKILL",)),
    # inside the subagent, after its edit: it goes on from its own checkpoint
    ("filesystem", "delegate_fix", "fixer", 2, None, ("SIGKILL",)),
    # after the first fix, Ctrl-C twice: stopped at once, the record says interrupted
    ("filesystem", "fix_median", "worker", 2, None, ("SIGINT", "SIGINT")),
], ids=["sandbox-after-a-command", "filesystem-in-a-subagent", "filesystem-ctrl-c-twice"])
def test_a_stop_with_the_workspace_ahead_of_the_checkpoint_resumes_to_the_same_files(tmp_path, backend, task, agent, at, first, stop):
    """The dir holds half-written files and a stray one when the process stops; the resume rewrites it from the
    checkpoint, and the run ends with the files dir and kept workspaces of a run the tool never stopped."""
    script = _crashing_script(task, agent, at, first)
    runs = {}
    for name in ("whole", "killed"):
        home = tmp_path / name
        home.mkdir()
        (home / "crash_tool.py").write_text(CRASH.replace("SIGNALS", str(tuple(int(getattr(signal, name)) for name in stop))))
        (home / "script.yaml").write_text(yaml.safe_dump(script))
        if name == "whole":
            (home / "crashed").touch()  # the tool carries on at once
        ran = run_cli(*DEMO, f"rubric.tasks=[{task}]", f"worker.backend={backend}", "++worker.tools={crash_tool.crash: null}",
                      "worker.script=script.yaml", "grader.script=script.yaml", "run.console=false", "hydra.run.dir=run",
                      cwd=home, timeout=300)
        runs[name] = home / "run"
        if name == "killed":
            killed = stop == ("SIGKILL",)
            assert ran.returncode == (-signal.SIGKILL if killed else 130) and (runs[name] / "tasks" / f"{task}-r0" / "files" / "stray.txt").exists()
            assert _record_at(runs[name])["status"] == ("running" if killed else "interrupted")
            ran = run_cli("resume", "--trust-run-dir", "run", cwd=home, timeout=300)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    assert _record_at(runs["killed"])["status"] == _record_at(runs["whole"])["status"] == "satisfied"
    whole = _kept(runs["whole"])
    assert _kept(runs["killed"]) == whole
    if first:  # the command's files are in the checkpoint, the binary one as its bytes
        assert whole["files/build/latin.bin"] == b"caf\xe9" and whole["files/build/log.txt"] == b"ok\n"


def _record_at(run_dir: Path) -> dict:
    return task_json(run_dir)
