"""The command line in real subprocesses: the demo, exit codes, the files a run leaves."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from support.helpers import (
    ROOT,
    SCRIPTED_EVIDENCE,
    cli_process,
    run_cli,
    verdict,
    write_script,
)

import rubric_runner


def test_offline_demo(tmp_path):
    run_dir = tmp_path / "demo"
    proc = run_cli("worker=scripted", "grader=scripted", "rubric=code", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "worker=scripted:demo (scripted: replays a script" in proc.stdout
    assert "test_unhashable" in proc.stdout
    assert proc.stdout.index("-- grading pass 1") < proc.stdout.index("-- grading pass 2")
    assert "grading pass 0" not in proc.stdout and "-- grading pass 3" not in proc.stdout
    assert "status: satisfied after 2 grading pass(es)" in proc.stdout
    assert f"run dir: {run_dir}" in proc.stdout
    for name in ("result.json", "events.jsonl", "tasks/task-r0/result.json", "tasks/task-r0/transcript.json",
                 ".hydra/config.yaml", ".hydra/overrides.yaml"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "result.json").read_text())["status"] == "satisfied"


def test_unsatisfied_run_exits_1(tmp_path):
    failing = verdict("needs_revision", ("c", False))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[failing])
    proc = run_cli(
        "worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}",
        "grader.max_iterations=1", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "x c: fix c" in proc.stdout
    assert "status: max_iterations_reached" in proc.stdout


def test_missing_key_exits_2_with_one_clear_line(tmp_path):
    proc = run_cli("rubric=haiku", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["status"] == "error" and record["error"]["type"] == "UsageError"


def test_unknown_preset_exits_2(tmp_path):
    proc = run_cli("grader=nope", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "grader/nope" in proc.stderr and "Traceback" not in proc.stderr


def test_prompt_group_override_from_the_command_line(tmp_path):
    proc = run_cli("prompt/grader=code_reviewer", "rubric=code", "--cfg", "job", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "You are a code reviewer grading generated code against a rubric." in proc.stdout


def test_console_script_is_installed():
    scripts = (ROOT / "pyproject.toml").read_text()
    assert 'rubric-runner = "rubric_runner.cli:main"' in scripts


def test_help_lists_groups_and_options(tmp_path):
    proc = run_cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for line in ("rubric          code, code_tasks, haiku, humaneval, repo_tasks, summary", "prompt/grader   builtin, code_reviewer", "exit codes: 0 satisfied"):
        assert line in proc.stdout
    assert "sonnet" in proc.stdout and "model " not in proc.stdout


def test_version_is_rubric_runners(tmp_path):
    proc = run_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"rubric_runner {rubric_runner.__version__}\n", proc.stdout


@pytest.mark.parametrize("hang", ["atexit.register(time.sleep, 3600)",
                                  "threading.Thread(target=time.sleep, args=(3600,)).start()"])
def test_an_exit_that_hangs_ends_with_the_code_after_the_grace(tmp_path, hang):
    """Ray's atexit disconnect, or a thread a library left running, cannot keep a finished process alive."""
    program = ("import atexit, sys, threading, time; import rubric_runner.cli as cli; cli.EXIT_GRACE_SECONDS = 1; "
               f"{hang}; sys.argv = ['rubric-runner', '--version']; cli.main()")
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"rubric_runner {rubric_runner.__version__}\n", proc
    assert proc.stderr == "exit: the interpreter's exit took over 1 s (a thread or an atexit handler did not finish); exiting with 0\n"


def test_a_caller_that_catches_mains_exit_goes_on(tmp_path):
    """The grace starts with the interpreter's own exit, not with ``main()``'s SystemExit."""
    program = ("import sys, time; import rubric_runner.cli as cli; cli.EXIT_GRACE_SECONDS = 1; "
               "sys.argv = ['rubric-runner', '--version']\ntry:\n    cli.main()\nexcept SystemExit:\n    pass\n"
               "time.sleep(2); print('still here')")
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"rubric_runner {rubric_runner.__version__}\nstill here\n", "")


def test_runs_started_at_once_never_share_a_dir(tmp_path):
    """By default each gets a dir of its own; given one dir, the second refuses in one line and leaves the first's record."""
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.5}], grader=[verdict("satisfied", ("c", True))])
    args = ["worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}"]
    with cli_process(*args, cwd=tmp_path) as one, cli_process(*args, cwd=tmp_path) as two:
        outputs = [proc.communicate(timeout=120) for proc in (one, two)]
    assert (one.returncode, two.returncode) == (0, 0), outputs
    dirs = sorted(tmp_path.glob("outputs/runs/*/*"))
    printed = {line.removeprefix("run dir: ") for out, _ in outputs for line in out.splitlines() if line.startswith("run dir: ")}
    assert len(dirs) == 2 and printed == {str(d) for d in dirs}
    assert all(re.fullmatch(r"\d\d-\d\d-\d\d\.\d{3}-[0-9a-f]{4}-haiku", d.name) for d in dirs), dirs

    shared = tmp_path / "shared"
    with cli_process(*args, f"hydra.run.dir={shared}", cwd=tmp_path) as one, \
            cli_process(*args, f"hydra.run.dir={shared}", cwd=tmp_path) as two:
        outputs = [proc.communicate(timeout=120) for proc in (one, two)]
    codes = sorted((one.returncode, two.returncode))
    assert codes == [0, 2], outputs
    refused = next(err for proc, (_, err) in zip((one, two), outputs) if proc.returncode == 2)
    holder = next(proc.pid for proc in (one, two) if proc.returncode == 0)
    assert re.fullmatch(rf"error: hydra.run.dir: {re.escape(str(shared))} is in use by pid {holder} on \S+ \(rubric-runner "
                        r"worker=scripted .*\) \(wait for it to end, or stop it; one process at a time works in a run or sweep dir\)\n",
                        refused), refused
    events = [json.loads(line)["event"] for line in (shared / "events.jsonl").read_text().splitlines()]
    assert events.count("run_start") == 1 and json.loads((shared / "result.json").read_text())["status"] == "satisfied"
    again = run_cli(*args, f"hydra.run.dir={shared}", cwd=tmp_path)
    assert again.returncode == 2 and "already holds another run's record" in again.stderr
