"""A task's workspace: loaded and checked before any model call, seeded into the worker's files once."""

from __future__ import annotations

import json
import os

import pytest
from support.helpers import run_scripted, task_dir_of, verdict, write_script

from rubric_runner.errors import UsageError
from rubric_runner.tasks.workspace import load_workspace

CRITERION = "The bug is fixed"


def _repo(root):
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return root


def test_a_dir_is_read_whole_by_its_relative_paths(tmp_path):
    repo = _repo(tmp_path / "repo")
    workspace = load_workspace("repo", ["tests/*"], tmp_path, "rubric.workspace", 10_000)
    assert sorted(workspace.files) == ["/src/calc.py", "/tests/test_calc.py"]
    assert workspace.files["/src/calc.py"] == (repo / "src" / "calc.py").read_text()
    assert workspace.protected_paths() == ["/tests/test_calc.py"] and workspace.unmatched() == []


def test_inline_files_and_an_unmatched_glob(tmp_path):
    workspace = load_workspace({"notes.md": "# notes\n"}, ["tests/*"], tmp_path, "rubric.workspace", 10_000)
    assert dict(workspace.files) == {"/notes.md": "# notes\n"} and workspace.unmatched() == ["tests/*"]


@pytest.mark.parametrize("case, message", [
    ("missing", "rubric.workspace: {root}/nowhere is not a directory"),
    ("too_big", "rubric.workspace: {root}/repo holds more than 40 bytes"),
    ("binary", "rubric.workspace: blob.bin is a binary file (not UTF-8 text)"),
    ("symlink", "rubric.workspace: secret is a symlink to {root}/outside.txt, outside the workspace {root}/repo"),
])
def test_a_bad_workspace_is_one_line_naming_the_key(tmp_path, case, message):
    repo = _repo(tmp_path / "repo")
    if case == "binary":
        (repo / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    if case == "symlink":
        (tmp_path / "outside.txt").write_text("secret")
        os.symlink(tmp_path / "outside.txt", repo / "secret")
    spec = "nowhere" if case == "missing" else "repo"
    with pytest.raises(UsageError) as caught:
        load_workspace(spec, [], tmp_path, "rubric.workspace", 40 if case == "too_big" else 10_000)
    assert str(caught.value).startswith(message.format(root=tmp_path)) and "\n" not in str(caught.value)


def test_a_dataset_row_names_its_workspace_relative_to_the_dataset(tmp_path):
    _repo(tmp_path / "data" / "repo")
    dataset = tmp_path / "data" / "tasks.jsonl"
    rows = [{"id": "fix", "task": "fix it", "workspace": "repo", "protected": ["tests/*"]}, {"id": "bad", "task": "x", "workspace": "gone"}]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "done"}], grader=[verdict("satisfied", (CRITERION, True))])
    result, _ = run_scripted(tmp_path, script, f"rubric.dataset={dataset}", f"rubric.text=- {CRITERION}")
    assert result.exit_code == 2 and result.error.message == (
        f"rubric.dataset[1].workspace: {tmp_path}/data/gone is not a directory "
        "(give the dir of the task's files (relative to the file that names it))")
    dataset.write_text(json.dumps(rows[0]) + "\n")
    result, _ = run_scripted(tmp_path / "again", script, f"rubric.dataset={dataset}", f"rubric.text=- {CRITERION}")
    assert result.status == "satisfied"


def test_the_worker_starts_from_the_seed_and_keeps_its_edits(tmp_path):
    _repo(tmp_path / "repo")
    worker = [
        {"tool_calls": [{"name": "read_file", "args": {"file_path": "/src/calc.py"}}]},
        {"tool_calls": [{"name": "edit_file", "args": {"file_path": "/src/calc.py", "old_string": "a - b", "new_string": "a + b"}}]},
        {"tool_calls": [{"name": "read_file", "args": {"file_path": "/src/calc.py"}}]},
        {"content": "fixed add"},
    ]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=[verdict("satisfied", (CRITERION, True))])
    result, run_dir = run_scripted(tmp_path, script, f"rubric.workspace={tmp_path / 'repo'}", f"rubric.text=- {CRITERION}")
    assert result.status == "satisfied"
    tools = [m["data"]["content"] for m in json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"] if m["type"] == "tool"]
    assert "return a - b" in tools[0] and "return a + b" in tools[2]


def test_a_follow_up_turn_keeps_the_files_its_thread_has(tmp_path):
    from rubric_runner.cli import run_command

    _repo(tmp_path / "repo")
    worker = [
        {"tool_calls": [{"name": "edit_file", "args": {"file_path": "/src/calc.py", "old_string": "a - b", "new_string": "a + b"}}]},
        {"content": "fixed add"},
        {"tool_calls": [{"name": "read_file", "args": {"file_path": "/src/calc.py"}}]},
        {"content": "it adds"},
    ]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=[verdict("satisfied", (CRITERION, True))] * 2)
    result, run_dir = run_scripted(tmp_path, script, f"rubric.workspace={tmp_path / 'repo'}", f"rubric.text=- {CRITERION}")
    assert result.status == "satisfied"
    assert run_command(["continue", str(run_dir), "Check that add adds"]) == 0
    turn = run_dir / "tasks" / "task-r0" / "turns" / "2"
    tools = [m["data"]["content"] for m in json.loads((task_dir_of(turn) / "transcript.json").read_text())["messages"] if m["type"] == "tool"]
    assert "return a + b" in tools[-1]  # the edit of the first turn, not the seed again
