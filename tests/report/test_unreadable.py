"""``rubric-runner report`` on a dir whose records cannot all be read: it writes what it can, names each
unreadable ``result.json`` on stderr and exits 3."""

from __future__ import annotations

import json
import shutil

import pytest
from support.helpers import run_cli

from rubric_runner.records import ExitCode


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    """A finished two-task scripted run."""
    root = tmp_path_factory.mktemp("unreadable")
    proc = run_cli("worker=scripted", "grader=scripted", "rubric=code_tasks", "rubric.tasks=[0:2]", "run.console=false",
                   f"hydra.run.dir={root / 'run'}", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root / "run"


@pytest.mark.parametrize("where", ["run", "task"])
def test_an_unreadable_record_is_named_and_fails_the_report(task_set, tmp_path, where):
    run = shutil.copytree(task_set, tmp_path / "run")
    task_dir = sorted((run / "tasks").iterdir())[0]
    broken = (run if where == "run" else task_dir) / "result.json"
    broken.write_text("garbage {{", encoding="utf-8")

    proc = run_cli("report", str(run), cwd=tmp_path)

    assert proc.returncode == ExitCode.ERROR, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"warning: {broken} is unreadable: Expecting value: line 1 column 1 (char 0)"]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert f"-> exit {int(ExitCode.ERROR)}" in proc.stdout
    assert (run / "report.md").is_file() and (run / "summary.jsonl").is_file()  # what could be read is reported


def test_readable_records_report_with_exit_0(task_set, tmp_path):
    run = shutil.copytree(task_set, tmp_path / "run")
    proc = run_cli("report", str(run), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [json.loads(line)["satisfied"] for line in (run / "summary.jsonl").read_text().splitlines()] == [2]
