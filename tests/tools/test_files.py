"""The grader's workspace tools: they read the worker's files as the pass sees them, and run the task's tests."""

from __future__ import annotations

from support.helpers import read_events, run_scripted, verdict, write_script

CRITERION = "The tests pass"
TEST_COMMAND = "python -m pytest -q tests"


def _repo(root):
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return root


def _call(name, **args):
    return {"tool_calls": [{"name": name, "args": args}]}


def _run(tmp_path, worker, grader):
    repo = _repo(tmp_path / "repo")
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=grader)
    tools = [f"+grader.tools.{name}={{}}" for name in ("ls", "read_file", "glob", "grep")]
    return run_scripted(tmp_path, script, f"rubric.workspace={repo}", "rubric.protected=[tests/*]",
                        f"rubric.text=- {CRITERION}", *tools, f"+grader.tools.run_tests={{command: '{TEST_COMMAND}'}}")


def _grader_calls(run_dir):
    events = read_events(run_dir)
    starts = [e for e in events if e["event"] == "tool_call_start" and e["agent"] == "grader"]
    ends = [e for e in events if e["event"] == "tool_call_end" and e["agent"] == "grader"]
    return [(start["tool"], start["input"], end["output"]) for start, end in zip(starts, ends, strict=True)]


def test_the_grader_reads_the_files_as_the_pass_sees_them(tmp_path):
    worker = [_call("edit_file", file_path="/calc.py", old_string="a - b", new_string="a + b"), {"content": "fixed"}]
    grader = [_call("ls"), _call("read_file", file_path="/calc.py", offset=1, limit=1), _call("glob", pattern="**/*.py"),
              _call("grep", pattern="assert"), _call("read_file", file_path="/nowhere.py"), _call("run_tests"),
              verdict("satisfied", (CRITERION, True))]
    result, run_dir = _run(tmp_path, worker, grader)
    assert result.status == "satisfied"
    calls = _grader_calls(run_dir)
    assert [name for name, _, _ in calls] == ["ls", "read_file", "glob", "grep", "read_file", "run_tests"]
    assert "/calc.py" in calls[0][2] and "/tests/" in calls[0][2]
    assert calls[1][1] == "{'file_path': '/calc.py', 'limit': 1, 'offset': 1}" and "2  " in calls[1][2] and "return a + b" in calls[1][2]
    assert "def add" not in calls[1][2]
    assert "/calc.py" in calls[2][2] and "/tests/test_calc.py" in calls[2][2]
    assert "/tests/test_calc.py" in calls[3][2] and "assert add(1, 2) == 3" in calls[3][2]
    assert "not found" in calls[4][2]
    assert calls[5][2].startswith("ok: true (exit code 0;") and "1 passed" in calls[5][2]


def test_run_tests_puts_the_protected_tests_back(tmp_path):
    worker = [_call("edit_file", file_path="/tests/test_calc.py", old_string="== 3", new_string="== -1"), {"content": "tests pass now"}]
    grader = [_call("read_file", file_path="/tests/test_calc.py"), _call("run_tests"), verdict("failed", (CRITERION, False))]
    _, run_dir = _run(tmp_path, worker, grader)
    calls = _grader_calls(run_dir)
    assert "== -1" in calls[0][2]  # the grader sees what the worker wrote
    assert calls[1][2].startswith("ok: false (exit code 1;")  # but the tests run as the task gave them (with its own, add(1, 2) == -1 passes)
