"""Malformed command lines: exit code 2, one line on stderr naming the key and the fix, no traceback. A
command line Hydra cannot compose leaves no run dir; one rejected after composing leaves a run dir whose
result.json says status error, UsageError. Some of each kind run as a real ``python -m rubric_runner``
subprocess, the others in this process (``SUBPROCESS``)."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from support.helpers import run_cli

import rubric_runner
from rubric_runner.cli import run_command

SCRIPTED = ("worker=scripted", "grader=scripted")
LINE = re.compile(r"error: (?P<key>\S+): .+ \(.+\)")

# id: (arguments, key named on the line, "compose" (no run dir) or "run" (a UsageError record))
CASES = {
    "unknown-worker-preset": (["worker=nope"], "worker", "compose"),
    "unknown-grader-preset": (["grader=nope"], "grader", "compose"),
    "unknown-rubric-preset": (["rubric=nope"], "rubric", "compose"),
    "unknown-prompt-preset": (["prompt/grader=nah"], "prompt/grader", "compose"),
    "unknown-key": (["grader.foo=1"], "grader.foo", "compose"),
    "unknown-top-level-key": (["foo=bar"], "foo", "compose"),
    "unknown-key-appended": (["+run.bogus=1"], "run.bogus", "run"),
    "max-iterations-zero": (["grader.max_iterations=0"], "grader.max_iterations", "run"),
    "max-iterations-negative": (["grader.max_iterations=-1"], "grader.max_iterations", "run"),
    "max-iterations-text": (["grader.max_iterations=abc"], "grader.max_iterations", "compose"),
    "max-iterations-bool": (["grader.max_iterations=true"], "grader.max_iterations", "compose"),
    "max-iterations-float": (["grader.max_iterations=1.5"], "grader.max_iterations", "compose"),
    "max-model-calls-zero": (["grader.max_model_calls=0"], "grader.max_model_calls", "run"),
    "temperature-text": (["worker.temperature=hot"], "worker.temperature", "compose"),
    "console-not-bool": (["run.console=maybe"], "run.console", "compose"),
    "rubric-text-empty": (["rubric.text=''"], "rubric.text", "run"),
    "rubric-text-list": (["rubric.text=[1,2]"], "rubric.text", "compose"),
    "rubric-text-null": (["rubric.text=null"], "rubric.text", "compose"),
    "task-missing": (["rubric.task=???"], "rubric.task", "run"),
    "task-deleted": (["~rubric.task"], "rubric.task", "compose"),
    "task-null": (["rubric.task=null"], "rubric.task", "compose"),
    "unknown-tool": (["+grader.tools.nope={}"], "grader.tools.nope", "run"),
    "tool-not-set-without-plus": (["grader.tools.nope={}"], "grader.tools.nope", "compose"),
    "tools-not-a-mapping": (["grader.tools=[a]"], "grader.tools", "compose"),
    "tool-settings-not-a-mapping": (["rubric=code", "grader.tools.run_test_suite=5"], "grader.tools.run_test_suite", "run"),
    "tool-setting-unknown": (["rubric=code", "+grader.tools.run_test_suite.bogus=1"], "grader.tools.run_test_suite.bogus", "run"),
    "tool-setting-wrong-type": (
        ["rubric=code", "+grader.tools.run_test_suite.wall_seconds=abc"], "grader.tools.run_test_suite.wall_seconds", "run"
    ),
    "tool-setting-out-of-range": (
        ["rubric=code", "+grader.tools.run_test_suite.cpu_seconds=-1"], "grader.tools.run_test_suite.cpu_seconds", "run"
    ),
    "test-suite-missing": (["rubric=code", "grader.tools.run_test_suite.suite=/nope.yaml"], "grader.tools.run_test_suite.suite", "run"),
    "script-missing": (["worker.script=/nope.yaml"], "worker.script", "run"),
    "unknown-provider": (["worker.model=nope:some-model"], "worker.model", "run"),
    "model-without-provider": (["worker.model=gpt-4o"], "worker.model", "run"),
    "model-without-id": (["grader.model=openai:"], "grader.model", "run"),
    "base-url-not-a-url": (["worker.base_url='not a url'"], "worker.base_url", "run"),
    "base-url-wrong-scheme": (["grader.base_url=ftp://127.0.0.1/v1"], "grader.base_url", "run"),
    "structured-output-unknown": (["grader.structured_output=xml"], "grader.structured_output", "compose"),
    "checkpointer-unknown": (["run.checkpointer=redis"], "run.checkpointer", "compose"),
    "isolation-unknown": (["sandbox.isolation=docker"], "sandbox.isolation", "compose"),
    "missing-api-key": (["worker=gpt"], "worker.model", "run"),
    "override-syntax": (["grader.max_iterations=["], "grader.max_iterations=[", "compose"),
    "yaml-error-config-dir": (["--config-dir", "{tmp}/user_conf", "grader=broken"], "broken.yaml:2", "compose"),
    "yaml-error-searchpath": (["hydra.searchpath=[file://{tmp}/user_conf]", "grader=broken"], "broken.yaml:2", "compose"),
    "config-dir-missing": (["--config-dir", "{tmp}/nope", "grader=mine"], "--config-dir", "compose"),
    "run-dir-not-writable": (["hydra.run.dir={tmp}/a_file/run"], "hydra.run.dir", "compose"),
    "api-key-in-kwargs": (["+worker.kwargs.api_key=sk-in-config-0123456789"], "worker.kwargs.api_key", "run"),
    "api-key-appended": (["+worker.api_key=sk-in-config-0123456789"], "worker.api_key", "run"),
    "api-key-overridden": (["worker.api_key=sk-in-config-0123456789"], "worker.api_key", "compose"),
}


IN_PROCESS = {"unknown-tool", "tool-setting-unknown", "tool-setting-wrong-type", "tool-setting-out-of-range",
              "script-missing", "missing-api-key", "max-iterations-zero", "max-iterations-negative",
              "max-model-calls-zero", "rubric-text-empty", "task-missing", "tool-settings-not-a-mapping",
              "test-suite-missing", "unknown-provider", "model-without-provider", "model-without-id",
              "base-url-not-a-url", "base-url-wrong-scheme"}
"""Cases the run itself rejects, once Hydra has composed them: run through ``runner.run`` (a subprocess
would add only the import of the agent's libraries). Every case Hydra itself rejects runs as a real
subprocess, and so do the run's rejections of a key given with ``+`` and of an API key in config, where
the files Hydra saved before the run refused must be scrubbed."""
SUBPROCESS = {"unknown-worker-preset", "override-syntax", "yaml-error-config-dir", "run-dir-not-writable",
              "unknown-key-appended", "api-key-in-kwargs", "api-key-appended",
              "sweep-bad-second-value", "sweep-bad-first-value", "sweep-bad-type", "sweep-fail-under",
              "regrade-unknown-preset", "continue-no-record", "neither-command-nor-override",
              "dataset-bad-json", "preview-chars-negative", "two-missing-keys"}
"""Cases run as a real subprocess: a few of each kind, and every one that gets as far as Hydra setting up
logging (a job, a sweep, a run dir claimed after composing). The other cases of ``CASES`` and ``COMMANDS``
run ``cli.run_command`` in this process."""


def _arguments(case: str, tmp) -> list[str]:
    (tmp / "user_conf" / "grader").mkdir(parents=True)
    (tmp / "user_conf" / "grader" / "broken.yaml").write_text("model: openai:x\n  bad: [\n")
    (tmp / "a_file").write_text("a regular file, not a directory\n")
    args = [arg.replace("{tmp}", str(tmp)) for arg in CASES[case][0]]
    flags = [arg for i, arg in enumerate(args) if arg.startswith("--") or (i and args[i - 1].startswith("--"))]
    run_dir = [] if any(arg.startswith("hydra.run.dir=") for arg in args) else [f"hydra.run.dir={tmp}/run"]
    return [*flags, *SCRIPTED, *(arg for arg in args if arg not in flags), *run_dir]


def _in_process(case: str, tmp, capsys) -> SimpleNamespace:
    overrides = _arguments(case, tmp)[:-1]
    result = rubric_runner.run(overrides, tmp / "run")
    out = capsys.readouterr()
    return SimpleNamespace(returncode=result.exit_code, stdout=out.out, stderr=out.err)


def _in_cli(argv: list[str], cwd, capsys, monkeypatch) -> SimpleNamespace:
    """``rubric-runner ARGV`` run from ``cwd`` in this process (``cli.run_command``)."""
    monkeypatch.chdir(cwd)
    loggers = (logging.getLogger(), logging.getLogger("hydra"))
    handlers = [list(logger.handlers) for logger in loggers]
    try:
        code = run_command(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    assert [logger.handlers for logger in loggers] == handlers, "Hydra set up logging: run this case in SUBPROCESS"
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every subprocess case, run a few at a time."""
    root = tmp_path_factory.mktemp("bad_input")

    def invoke(case):
        tmp = root / case
        return run_cli(*_arguments(case, tmp), cwd=tmp)

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {case: pool.submit(invoke, case) for case in CASES if case in SUBPROCESS}
    return {case: (future.result(), root / case) for case, future in futures.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(outcomes, case, tmp_path, capsys, monkeypatch):
    if case in IN_PROCESS:
        proc, tmp = _in_process(case, tmp_path, capsys), tmp_path
    elif case in SUBPROCESS:
        proc, tmp = outcomes[case]
    else:
        proc, tmp = _in_cli(_arguments(case, tmp_path), tmp_path, capsys, monkeypatch), tmp_path
    _, key, stage = CASES[case]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    match = LINE.fullmatch(lines[0])
    assert match and key in match["key"], lines[0]
    run_dir = tmp / "run"
    if stage == "compose":
        assert not run_dir.exists()
        return
    record = json.loads((run_dir / "result.json").read_text())
    assert (record["status"], record["exit_code"], record["error"]["type"]) == ("error", 2, "UsageError")
    assert key in record["error"]["key"]
    assert "sk-in-config" not in "".join(p.read_text() for p in run_dir.rglob("*") if p.suffix in (".yaml", ".json", ".jsonl"))


def test_full_hydra_error_still_gives_the_trace(tmp_path):
    proc = run_cli("grader=nope", cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"})
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "MissingConfigException" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: grader: ")


def _user_files(tmp):
    """A run dir Hydra saved overrides for, a user config dir, a task set with bad JSON on line 2."""
    run = tmp / "old_run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- worker=scripted\n- grader=scripted\n")
    (tmp / "user_conf" / "rubric").mkdir(parents=True)
    (tmp / "user_conf" / "rubric" / "short3.yaml").write_text(
        "# @package _global_\nrubric:\n  name: short3\n  task: say hi\n  text: '- says hi'\n  criteria_typo: 1\n")
    (tmp / "tasks.jsonl").write_text('{"id": "a", "task": "do a"}\n{"id": "b", task: "do b"}\n')
    (tmp / "empty").mkdir()


# id: (arguments, key named on the line, "compose" (no run or sweep dir) or "run" (a UsageError record))
COMMANDS = {
    "sweep-bad-second-value": (["-m", *SCRIPTED, "rubric=code,haikuu"], "rubric", "compose"),
    "sweep-bad-first-value": (["-m", *SCRIPTED, "rubric=haikuu,code"], "rubric", "compose"),
    "sweep-bad-type": (["-m", *SCRIPTED, "grader.max_iterations=x,3"], "grader.max_iterations", "compose"),
    "sweep-fail-under": (["-m", *SCRIPTED, "rubric=code,haiku", "sweep.fail_under=1.5"], "sweep.fail_under", "compose"),
    "regrade-unknown-preset": (["regrade", "{tmp}/old_run", "grader=sonet"], "grader", "compose"),
    "regrade-bad-type": (["regrade", "{tmp}/old_run", "grader.max_iterations=x"], "grader.max_iterations", "compose"),
    "regrade-unknown-key": (["regrade", "{tmp}/old_run", "grader.nokey=1"], "grader.nokey", "compose"),
    "regrade-list-without-m": (["regrade", "{tmp}/old_run", "grader=haiku,gpt"], "grader", "compose"),
    "regrade-no-transcript": (["regrade", "{tmp}/old_run"], "RUN_DIR", "compose"),
    "regrade-missing-dir": (["regrade", "{tmp}/nope"], "RUN_DIR", "compose"),
    "regrade-empty-dir": (["regrade", "{tmp}/empty"], "RUN_DIR", "compose"),
    "resume-missing-dir": (["resume", "{tmp}/nope"], "RUN_DIR", "compose"),
    "resume-empty-dir": (["resume", "{tmp}/empty"], "RUN_DIR", "compose"),
    "continue-missing-dir": (["continue", "{tmp}/nope", "Now add a docstring"], "RUN_DIR", "compose"),
    "continue-no-record": (["continue", "{tmp}/old_run", "Now add a docstring"], "RUN_DIR", "compose"),
    "unknown-key-in-user-rubric": (["--config-dir", "{tmp}/user_conf", *SCRIPTED, "rubric=short3"], "rubric.criteria_typo", "compose"),
    "dataset-bad-json": ([*SCRIPTED, "rubric.dataset={tmp}/tasks.jsonl"], "rubric.dataset", "run"),
    "preview-chars-negative": ([*SCRIPTED, "run.preview_chars=-3"], "run.preview_chars", "run"),
    "neither-command-nor-override": (["frobnicate"], "frobnicate", "compose"),
    "two-missing-keys": (["worker=gpt", "grader=gemini"], "worker.model,grader.model", "run"),
}
DETAILS = {  # what else the line must say
    "sweep-bad-second-value": "'rubric/haikuu' not found",
    "unknown-key-in-user-rubric": "Key 'criteria_typo' not in 'RubricConfig'",
    "dataset-bad-json": "line 2: Expecting property name enclosed in double quotes at column 13",
    "neither-command-nor-override": "neither a command nor an override (commands: compare, continue, doctor, golden, plugins, policies, regrade, report, resume, review, tools;",
    "continue-no-record": "holds no record of a run (continue a run that ended with a verdict)",
    "two-missing-keys": "set OPENAI_API_KEY and GOOGLE_API_KEY in the environment",
    "regrade-empty-dir": "holds no .hydra/overrides.yaml",
    "regrade-list-without-m": "needs -m (rubric-runner regrade RUN_DIR -m grader=haiku,gpt)",
    "regrade-no-transcript": "holds no saved transcript",
    "resume-missing-dir": "is not a directory",
}


def _command(case: str, tmp) -> list[str]:
    _user_files(tmp)
    args = [arg.replace("{tmp}", str(tmp)) for arg in COMMANDS[case][0]]
    if args[0] not in ("regrade", "resume", "continue", "frobnicate"):
        args.append(f"hydra.sweep.dir={tmp}/sweep" if args[0] == "-m" else f"hydra.run.dir={tmp}/run")
    return args


@pytest.fixture(scope="module")
def command_outcomes(tmp_path_factory):
    """Every subprocess case, run a few at a time."""
    root = tmp_path_factory.mktemp("bad_commands")

    def invoke(case):
        tmp = root / case
        return run_cli(*_command(case, tmp), cwd=tmp), tmp

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {case: pool.submit(invoke, case) for case in COMMANDS if case in SUBPROCESS}
    return {case: future.result() for case, future in futures.items()}


@pytest.mark.parametrize("case", list(COMMANDS))
def test_bad_command(command_outcomes, case, tmp_path, capsys, monkeypatch):
    if case in SUBPROCESS:
        proc, tmp = command_outcomes[case]
    else:
        proc, tmp = _in_cli(_command(case, tmp_path), tmp_path, capsys, monkeypatch), tmp_path
    _, key, stage = COMMANDS[case]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    match = LINE.fullmatch(lines[0])
    assert match and key == match["key"], lines[0]
    assert DETAILS.get(case, "") in lines[0]
    assert not (tmp / "sweep").exists() and not (tmp / "old_run" / "regrades").exists()
    assert not (tmp / "old_run" / "turns").exists()
    if stage == "compose":
        assert not (tmp / "run").exists()
    else:
        record = json.loads((tmp / "run" / "result.json").read_text())
        assert (record["status"], record["exit_code"], record["error"]["key"]) == ("error", 2, key)


@pytest.mark.parametrize("command", ["regrade", "resume", "report", "tools", "plugins"])
def test_every_command_has_help_on_stdout(tmp_path, command):
    proc = run_cli(command, "--help", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"usage: rubric-runner {command}")


def test_a_closed_pipe_ends_the_listing_quietly(tmp_path):
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m rubric_runner tools | head -1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.strip() == "count_syllables"


@pytest.mark.parametrize("streams", ["stdout", "stdout and stderr"])
def test_a_run_whose_reader_goes_away_ends_as_it_would_have(tmp_path, streams):
    redirect = " 2>&1" if streams == "stdout and stderr" else ""
    command = (f"set -o pipefail; {sys.executable} -m rubric_runner worker=scripted grader=scripted rubric=code "
               f"hydra.run.dir=run{redirect} | head -1")
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (record["status"], record["exit_code"], proc.returncode) == ("satisfied", 0, 0), proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_a_sweep_whose_reader_goes_away_ends_as_it_would_have(tmp_path):
    command = (f"set -o pipefail; {sys.executable} -m rubric_runner -m worker=scripted grader=scripted rubric=code "
               "grader.max_iterations=1,2 hydra.sweep.dir=sweep | head -1")
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    records = [json.loads((tmp_path / "sweep" / job / "result.json").read_text()) for job in ("0", "1")]
    assert [(r["status"], r["exit_code"]) for r in records] == [("max_iterations_reached", 1), ("satisfied", 0)]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert len((tmp_path / "sweep" / "summary.jsonl").read_text().splitlines()) == 2


def test_ctrl_c_while_starting_up_ends_in_one_line(monkeypatch, capsys):
    """Ctrl-C while the command is still importing (before any run holds its dir): exit 130, one line, no
    traceback (the run's own Ctrl-C is recorded by the run: test_interrupt)."""
    from rubric_runner import cli

    def interrupted(argv: list[str]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_command", interrupted)
    monkeypatch.setattr(sys, "argv", ["rubric-runner", "resume", "outputs/run"])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
