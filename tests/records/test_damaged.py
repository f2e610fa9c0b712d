"""Damaged files in a run dir: a ``result.json`` that is JSON but not an object is named as an unreadable one is, by
every command that reads it; a damaged ``checkpoints.sqlite`` or ``run.cache`` is one line naming the file and the
fix, and the run's record keeps its task rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.helpers import run_cli, scripted_overrides, verdict, write_dataset, write_script

from rubric_runner.review.queue import items

OK = verdict("satisfied", ("c", True))
NOT_OBJECTS = {"null": "JSON null", '"a string"': "a string", "[1, 2]": "a list"}


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    """A finished two-task scripted run, and its script."""
    root = tmp_path_factory.mktemp("damaged")
    script = write_script(root / "s.yaml", worker=[{"content": "x"}], grader=[OK] * 4)
    data = write_dataset(root / "tasks.jsonl", ["a", "b"])
    proc = run_cli(*scripted_overrides(script, f"rubric.dataset={data}", f"hydra.run.dir={root / 'run'}"), cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root / "run"


COMMANDS = {
    "report": lambda run, other: ["report", str(run)],
    "compare": lambda run, other: ["compare", str(other), str(run)],
    "resume": lambda run, other: ["resume", str(run)],
    "regrade": lambda run, other: ["regrade", str(run)],
    "continue": lambda run, other: ["continue", "--task", "a", str(run), "Now more"],
}


GARBAGE = ("garbage {{", "Expecting value: line 1 column 1 (char 0)")


def _said(run: Path, task_set: Path, command: str, broken: Path, text: str, reason: str) -> tuple[int, list[str]]:
    """What ``command`` ends with on a copy of the run whose ``broken`` file holds ``text``: its exit code and
    its stderr, with ``reason`` (why the file is unreadable) in it replaced."""
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(task_set, run)
    broken.write_text(text + "\n", encoding="utf-8")
    proc = run_cli(*COMMANDS[command](run, task_set), cwd=run.parent)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.returncode, proc.stderr.replace(reason, "REASON").splitlines()


@pytest.mark.parametrize("where", ["run", "task"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_record_that_is_json_but_no_object_is_read_as_an_unreadable_one(task_set, tmp_path, command, where):
    run = tmp_path / "run"
    broken = (run if where == "run" else run / "tasks" / "a-r0") / "result.json"
    unreadable = _said(run, task_set, command, broken, *GARBAGE)
    for value, kind in NOT_OBJECTS.items() if command == "report" else [("null", NOT_OBJECTS["null"])]:
        assert _said(run, task_set, command, broken, value, f"it holds {kind}, not a record (a JSON object)") == unreadable
    if command == "report":
        assert unreadable == (3, [f"warning: {broken} is unreadable: REASON"])


@pytest.mark.parametrize("value", list(NOT_OBJECTS))
def test_the_review_page_leaves_out_a_task_whose_record_is_no_object(task_set, tmp_path, value):
    run = shutil.copytree(task_set, tmp_path / "run")
    (run / "tasks" / "a-r0" / "result.json").write_text(value, encoding="utf-8")
    assert [item.key for item in items(run)] == ["tasks/b-r0"]


def _damage(path: Path) -> None:
    """Overwrite every 7th byte of a SQLite file's pages after the first, as a bad disk or a torn copy would."""
    data = bytearray(path.read_bytes())
    for index in range(4096 + 100, len(data), 7):
        data[index] = 0xAB
    path.write_bytes(data)


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory):
    """A two-task run with a response cache, whose second task ended in a provider error (resume reruns it)."""
    root = tmp_path_factory.mktemp("unfinished")
    script = write_script(root / "s.yaml", worker=[{"content": "x"}], grader=[OK] * 4,
                          tasks={"b": {"worker": [{"raise": "provider 500"}, {"content": "x"}]}})
    data = write_dataset(root / "tasks.jsonl", ["a", "b"])
    overrides = scripted_overrides(script, f"rubric.dataset={data}", f"run.cache={root / 'run' / 'run.cache'}",
                                   f"hydra.run.dir={root / 'run'}")
    proc = run_cli(*overrides, cwd=root)
    assert proc.returncode == 3, proc.stderr
    return root / "run"


@pytest.mark.parametrize("name, key, fix", [
    ("checkpoints.sqlite", "run.checkpointer", "restore {path} from a copy, or move it aside and resume: the finished "
     "tasks keep their records, the others run again from the start"),
    ("run.cache", "run.cache", "delete {path} or give run.cache another file: it only holds replies to replay, and the "
     "next run makes them again"),
])
def test_a_damaged_database_is_one_line_naming_it_and_the_record_keeps_its_tasks(unfinished, tmp_path, name, key, fix):
    run = shutil.copytree(unfinished, tmp_path / "run")
    path = run / name
    _damage(path)
    before = (run / "result.json").read_bytes()
    proc = run_cli("resume", str(run), f"run.cache={run / 'run.cache'}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"error: {key}: {path} is damaged: database disk image is malformed "
                                        f"({fix.format(path=path)})"]
    assert (run / "result.json").read_bytes() == before
    path.rename(run / f"{name}.damaged")  # the fix: the resume reruns the unfinished task
    proc = run_cli("resume", str(run), f"run.cache={run / 'run.cache'}", cwd=tmp_path)
    record = json.loads((run / "result.json").read_text())
    assert (proc.returncode, record["status"], record["aggregate"]["reused"]) == (0, "satisfied", 1), proc.stderr
