"""Nothing finished is rewritten by a resume: what a resume needs is checked before any file of the run dir is
touched, a resume that changes the task selection is refused, and a finished task set's records stay as they were."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from support.helpers import SCRIPTED_EVIDENCE, run_cli, scripted_overrides, verdict, write_dataset, write_script
from support.wire import FakeServer, model_overrides, text

import rubric_runner
from rubric_runner.environment import PLUGINS_ENV
from rubric_runner.errors import UsageError

OK = verdict("satisfied", ("c", True))
IDS = ["a", "b", "c", "d", "e", "f"]


def digests(run_dir: Path) -> dict[str, str]:
    """Every file below ``run_dir``, by its path there, with the SHA-256 of its bytes."""
    return {str(path.relative_to(run_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(run_dir.rglob("*")) if path.is_file()}


def _task_set(tmp_path: Path, *extra: str) -> Path:
    """A finished six-task run of the default rubric (its grader's count_syllables comes from a plugin)."""
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = write_dataset(tmp_path / "tasks.jsonl", IDS)
    proc = run_cli(*scripted_overrides(script, f"rubric.dataset={data}", f"hydra.run.dir={tmp_path / 'run'}", *extra),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "run"


def test_a_resume_without_a_plugin_the_run_used_is_one_line_and_touches_nothing(tmp_path):
    run_dir = _task_set(tmp_path)
    before = digests(run_dir)
    proc = run_cli("resume", str(run_dir), cwd=tmp_path, env={PLUGINS_ENV: ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "error: grader.tools.count_syllables: unknown tool 'count_syllables' (available tools: glob, grep, ls, "
        "read_file, run_check, run_test_suite, run_tests, workspace_tests; install the plugin that provides it; RUBRIC_RUNNER_PLUGINS='' limits which plugins load)"]
    assert digests(run_dir) == before
    proc = run_cli("resume", str(run_dir), cwd=tmp_path)  # with the plugin: nothing to redo, every task kept
    record = json.loads((run_dir / "result.json").read_text())
    assert (proc.returncode, record["status"], record["aggregate"]["reused"]) == (0, "satisfied", 6), proc.stderr


def test_a_resume_without_the_key_is_one_line_and_touches_nothing(tmp_path, fake_keys, monkeypatch):
    data = write_dataset(tmp_path / "tasks.jsonl", IDS[:2])
    script = write_script(tmp_path / "s.yaml", worker=[], grader=[OK])
    with FakeServer("openai", [text("x"), text("y")]) as worker:
        overrides = [*model_overrides("worker", worker), "grader=scripted", f"grader.script={script}", "run.console=false",
                     SCRIPTED_EVIDENCE, "~grader.tools.count_syllables", "~rubric.verify.count_syllables",
                     f"rubric.dataset={data}"]
        record = rubric_runner.run(overrides, tmp_path / "run")
        assert record.status == "satisfied" and [row.status for row in record.tasks] == ["satisfied"] * 2
        before = digests(tmp_path / "run")
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(UsageError, match=r"^worker\.model: openai:\S+ needs an API key \(set OPENAI_API_KEY"):
            rubric_runner.resume(tmp_path / "run")
    assert digests(tmp_path / "run") == before


def test_a_resume_that_changes_the_task_selection_is_refused(tmp_path):
    run_dir = _task_set(tmp_path)
    before = digests(run_dir)
    proc = run_cli("resume", str(run_dir), "rubric.tasks=[0:2]", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "error: RUN_DIR: a resume keeps the configuration the run had; these overrides change it: rubric.tasks "
        "(start a new run for another configuration, or grade the run again with `rubric-runner regrade RUN_DIR grader=...`)"]
    assert digests(run_dir) == before
    assert len(json.loads((run_dir / "result.json").read_text())["tasks"]) == 6


def test_a_resume_of_a_finished_task_set_keeps_its_task_records_byte_for_byte(tmp_path):
    run_dir = _task_set(tmp_path)
    tasks = {path: digest for path, digest in digests(run_dir).items() if path.startswith("tasks/")}
    proc = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = digests(run_dir)
    assert {path: after[path] for path in tasks} == tasks
    record = json.loads((run_dir / "result.json").read_text())
    assert (record["resumed"], record["aggregate"]["reused"], record["aggregate"]["rerun"]) == (1, 6, 0)


def test_a_sweeps_resume_without_the_key_leaves_its_jobs_records_as_they_were(tmp_path, fake_keys, monkeypatch):
    script = write_script(tmp_path / "s.yaml", worker=[], grader=[OK])
    sweep_dir = tmp_path / "sweep"
    with FakeServer("openai", [text("x"), text("y")]) as worker:
        args = ("-m", *model_overrides("worker", worker), "grader=scripted", f"grader.script={script}", "run.console=false",
                SCRIPTED_EVIDENCE, "grader.max_iterations=1,2", f"hydra.sweep.dir={sweep_dir}")
        assert run_cli(*args, cwd=tmp_path).returncode == 0
        jobs = {path: digest for path, digest in digests(sweep_dir).items() if path[0].isdigit() and "/.hydra/" not in path}
        monkeypatch.delenv("OPENAI_API_KEY")
        proc = run_cli(*args, "run.resume=true", cwd=tmp_path)
    refused = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(refused) == 2 and all("needs an API key (set OPENAI_API_KEY" in line for line in refused), proc.stderr
    after = digests(sweep_dir)
    assert {path: after.get(path) for path in jobs} == jobs  # Hydra saves each job's .hydra/ before the job starts
