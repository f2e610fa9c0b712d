"""What a run keeps of a task's workspace: each grading pass's files and the final ones, as changes against the seed."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from hashlib import sha256

import yaml
from fixtures import fixture_dirs
from langgraph.checkpoint.sqlite import SqliteSaver
from support.helpers import only_task, read_events, run_json, run_scripted, task_dir_of, verdict, write_script
from support.judged import judge

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.loop.seed_refs import SeedRefs
from rubric_runner.loop.workspaces import files_at, kept_seed, texts

CRITERION = "add adds"
EDIT = "edit_file"


def _repo(root):
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return root


def _edit(old, new, path="/calc.py"):
    return {"tool_calls": [{"name": EDIT, "args": {"file_path": path, "old_string": old, "new_string": new}}]}


def test_each_pass_keeps_its_files_as_changes_against_the_seed(tmp_path):
    repo = _repo(tmp_path / "repo")
    worker = [_edit("a - b", "a * b"), {"content": "first try"}, _edit("a * b", "a + b"),
              _edit("== 3", "== 3  # checked", "/tests/test_calc.py"), {"content": "second try"}]
    grader = [verdict("needs_revision", (CRITERION, False)), verdict("satisfied", (CRITERION, True))]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=grader)
    result, run_dir = run_scripted(tmp_path, script, f"rubric.workspace={repo}", "rubric.protected=[tests/*]",
                                   f"rubric.text=- {CRITERION}", "rubric.workspace_diff_max_bytes=150")
    task = only_task(result)
    assert result.status == "satisfied" and [w.attempt for w in task.workspaces] == [1, 2]
    first, second = task.workspaces
    assert first.changed == ["/calc.py"] and first.tampered == [] and not first.diff_cut
    diff = (task_dir_of(run_dir) / first.diff).read_text()
    assert "-    return a - b\n+    return a * b\n" in diff and diff.startswith("--- a/calc.py\n+++ b/calc.py\n")
    assert second.changed == ["/calc.py", "/tests/test_calc.py"] and second.tampered == ["/tests/test_calc.py"]
    assert second.diff_cut and second.diff_bytes == 150 == second.diff_cap
    seed = json.loads((run_dir / "seeds" / f"{task.workspace_seed}.json").read_text())
    assert seed == {"/calc.py": (repo / "calc.py").read_text(), "/tests/test_calc.py": (repo / "tests" / "test_calc.py").read_text()}
    assert files_at(task_dir_of(run_dir), "attempt-1", seed)["/calc.py"] == "def add(a, b):\n    return a * b\n"
    rebuilt = files_at(task_dir_of(run_dir), "attempt-2", seed)
    assert rebuilt["/calc.py"] == "def add(a, b):\n    return a + b\n" and "# checked" in rebuilt["/tests/test_calc.py"]
    assert task.final_workspace.changed == second.changed and files_at(task_dir_of(run_dir), "final", seed) == rebuilt
    saved = run_json(run_dir)["task"]
    assert saved["workspaces"][1]["diff"] == "workspace/attempt-2/changes.diff"


def test_a_task_without_a_workspace_keeps_none(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "done"}], grader=[verdict("satisfied", (CRITERION, True))])
    result, run_dir = run_scripted(tmp_path, script, f"rubric.text=- {CRITERION}")
    assert only_task(result).workspaces == [] and only_task(result).final_workspace is None
    assert not list(run_dir.glob("**/workspace")) and "workspaces" not in run_json(run_dir)["task"]


def test_the_reports_show_each_attempts_diff(tmp_path):
    repo = _repo(tmp_path / "repo")
    worker = [_edit("a - b", "a * b"), {"content": "first try"}, _edit("== 3", "== 2", "/tests/test_calc.py"), {"content": "second"}]
    grader = [verdict("needs_revision", (CRITERION, False)), verdict("satisfied", (CRITERION, True))]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=grader)
    _, run_dir = run_scripted(tmp_path, script, f"rubric.workspace={repo}", "rubric.protected=[tests/*]", f"rubric.text=- {CRITERION}")
    assert run_command(["report", str(run_dir)]) == 0
    markdown = (run_dir / "report.md").read_text()
    section = markdown[markdown.index("## Workspace diffs"):markdown.index("## Runs")]
    assert "- attempt 1: /calc.py\n" in section and "- attempt 2: /calc.py, /tests/test_calc.py; **tampered**: /tests/test_calc.py" in section
    assert "+    return a * b" in section and "-    assert add(1, 2) == 3" in section and "- final: /calc.py, /tests/test_calc.py" in section
    html = (run_dir / "report.html").read_text()
    assert "+    assert add(1, 2) == 2" in html and '"tampered":["/tests/test_calc.py"]' in html


def _hidden(root):
    (root / "hidden").mkdir(parents=True)
    (root / "hidden" / "test_hidden.py").write_text("from calc import add\n\n\ndef test_negative():\n    assert add(-1, -2) == -3\n")
    return root / "hidden"


VERIFY = "+rubric.verify.workspace_tests={{tests: {hidden}, tests_at: hidden, command: 'python -m pytest -q tests hidden'}}"
NO_SYLLABLES = "~rubric.verify.count_syllables"


def test_hidden_checks_run_on_each_attempts_workspace_and_a_tampered_one_fails(tmp_path):
    repo, hidden = _repo(tmp_path / "repo"), _hidden(tmp_path / "secret")
    original = (repo / "tests" / "test_calc.py").read_text()
    worker = [_edit("== 3", "== -1", "/tests/test_calc.py"), {"content": "the tests pass"},
              {"tool_calls": [{"name": "write_file", "args": {"file_path": "/tests/test_calc.py", "content": original}}]},
              _edit("a - b", "a + b"), {"content": "fixed add"}]
    grader = [verdict("needs_revision", (CRITERION, False)), verdict("satisfied", (CRITERION, True))]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=grader)
    result, _ = run_scripted(tmp_path, script, f"rubric.workspace={repo}", "rubric.protected=[tests/*]",
                             f"rubric.text=- {CRITERION}", NO_SYLLABLES, VERIFY.format(hidden=hidden))
    task = only_task(result)
    first, second = task.verified_attempts
    assert first.tampered == ["/tests/test_calc.py"] and first.verification.outcome == "failed"
    assert {check.tool: check.outcome for check in first.verification.checks} == {"workspace_tests": "failed", "protected_files": "failed"}
    assert second.tampered == [] and second.verification.outcome == "passed"
    assert task.verification.first.outcome == "failed" and task.verification.final.outcome == "passed"


def test_a_satisfied_verdict_on_a_tampered_workspace_is_the_graders_error(tmp_path):
    repo, hidden = _repo(tmp_path / "repo"), _hidden(tmp_path / "secret")
    worker = [_edit("a - b", "a + b"), _edit("== 3", "== 3 or True", "/tests/test_calc.py"), {"content": "fixed"}]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=[verdict("satisfied", (CRITERION, True))])
    result, run_dir = run_scripted(tmp_path, script, f"rubric.workspace={repo}", "rubric.protected=[tests/*]",
                                   f"rubric.text=- {CRITERION}", NO_SYLLABLES, VERIFY.format(hidden=hidden))
    final = only_task(result).verification.final
    assert result.status == "satisfied" and final.passed is False  # its code passes the tests; the change to them fails it
    assert [(c.tool, c.outcome) for c in final.checks] == [("workspace_tests", "passed"), ("protected_files", "failed")]
    assert run_command(["report", str(run_dir)]) == 0
    assert "**tampered**: /tests/test_calc.py" in (run_dir / "report.md").read_text()
    judgement = judge([(result.header, only_task(result))], {})
    assert (judgement.satisfied_failed, judgement.satisfied_passed) == (1, 0)


def test_tasks_that_start_from_one_workspace_keep_one_seed_and_checkpoints_name_its_files(tmp_path):
    repo = _repo(tmp_path / "repo")
    big = "".join(f"line {i}: the data the worker leaves alone\n" for i in range(100))
    (repo / "data.txt").write_text(big)
    rows = tmp_path / "tasks.jsonl"
    rows.write_text("".join(json.dumps({"id": name, "task": "fix add", "workspace": "repo"}) + "\n" for name in ("a", "b")))
    script = write_script(tmp_path / "s.yaml", worker=[_edit("a - b", "a + b"), {"content": "fixed"}],
                          grader=[verdict("satisfied", (CRITERION, True))])
    result, run_dir = run_scripted(tmp_path, script, f"rubric.dataset={rows}", f"rubric.text=- {CRITERION}", NO_SYLLABLES)
    assert result.aggregate.statuses == {"satisfied": 2}
    (kept,) = (run_dir / "seeds").iterdir()  # one seed for both tasks, named by its digest
    records = [run_json(run_dir / "tasks" / f"{name}-r0") for name in ("a", "b")]
    assert [record["workspace_seed"] for record in records] == [kept.stem] * 2 == [sha256(kept.read_bytes()).hexdigest()] * 2
    seed = kept_seed(run_dir, kept.stem, "a")
    assert seed == {"/calc.py": (repo / "calc.py").read_text(), "/data.txt": big,
                    "/tests/test_calc.py": (repo / "tests" / "test_calc.py").read_text()}
    with closing(sqlite3.connect(run_dir / "checkpoints.sqlite")) as db:
        types = {row[0] for row in db.execute("SELECT type FROM checkpoints")}
        saver = SqliteSaver(db, serde=SeedRefs(run_dir))  # read back with no task at hand
        thread = saver.get_tuple({"configurable": {"thread_id": records[0]["thread_id"], "checkpoint_ns": ""}})
    assert types == {"msgpack+seeds"} and big.encode() not in (run_dir / "checkpoints.sqlite").read_bytes()
    files = texts(thread.checkpoint["channel_values"]["files"].value)
    assert files == files_at(run_dir / "tasks" / "a-r0", "final", seed) and files["/calc.py"].endswith("a + b\n")


REREADER = [{"tool_calls": [{"name": "read_file", "args": {"file_path": "/calc.py"}}]}, verdict("satisfied", ("add adds", True))]


def test_a_run_dir_with_its_seeds_kept_by_task_id_is_reported_regraded_resumed_and_continued(tmp_path):
    """A run dir written before seeds were kept by digest (``tests/fixtures/seeds_by_task``): its seeds are
    ``seeds/<task id>.json``, its records name none, its checkpoints hold the files themselves."""
    run_dir = fixture_dirs("seeds_by_task", tmp_path) / "run"
    assert run_command(["report", str(run_dir)]) == 0
    assert "-    return a - b\n+    return a + b" in (run_dir / "report.md").read_text()
    script = tmp_path / "regrader.yaml"
    script.write_text(yaml.safe_dump({"grader": [], "tasks": {"a": {"grader": REREADER}, "b": {"grader": REREADER}}}))
    assert run_command(["regrade", str(run_dir), f"grader.script={script}", "run.console=false"]) == 0
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    reads = [e for e in read_events(regrade_dir) if e["event"] == "tool_call_end" and e["tool"] == "read_file"]
    assert sorted(e["task_id"] for e in reads) == ["a", "b"] and all("return a + b" in e["output"] for e in reads)
    resumed = rubric_runner.resume(run_dir)
    assert resumed.aggregate.statuses == {"satisfied": 2} and resumed.aggregate.reused == 2
    assert run_command(["continue", "--task", "a", str(run_dir), "Read calc.py back", "run.console=false"]) == 0
    turn = run_dir / "tasks" / "a-r0" / "turns" / "2"
    record = run_json(turn)["task"]
    assert record["status"] == "satisfied" and (turn / "seeds" / f"{record['workspace_seed']}.json").is_file()
    reads = [e for e in read_events(turn) if e["event"] == "tool_call_end" and e["tool"] == "read_file"]
    assert "return a + b" in reads[0]["output"]  # the thread's files, from checkpoints that hold them whole
