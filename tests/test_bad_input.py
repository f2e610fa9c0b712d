"""Malformed command lines, each as a real ``python -m rubric_runner`` subprocess: exit code 2, one line
on stderr naming the key and the fix, no traceback. A command line Hydra cannot compose leaves no run
dir; one rejected after composing leaves a run dir whose result.json says status error, ConfigError."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from conftest import compose_config, run_cli
from rubric_runner.runner import run

SCRIPTED = ("worker=scripted", "grader=scripted")
LINE = re.compile(r"error: (?P<key>\S+): .+ \(.+\)")

# id: (arguments, key named on the line, "compose" (no run dir) or "run" (a ConfigError record))
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
    "structured-output-unknown": (["grader.structured_output=xml"], "grader.structured_output", "run"),
    "checkpointer-unknown": (["run.checkpointer=redis"], "run.checkpointer", "run"),
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
              "script-missing", "missing-api-key"}
"""Cases found only once the agent is being built: run through ``runner.run`` (the subprocess would add
only import time); the rest, and every case Hydra itself rejects, run as real subprocesses."""


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
    result = run(compose_config(overrides), tmp / "run", overrides)
    out = capsys.readouterr()
    return SimpleNamespace(returncode=result.exit_code, stdout=out.out, stderr=out.err)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every subprocess case, run a few at a time."""
    root = tmp_path_factory.mktemp("bad_input")

    def invoke(case):
        tmp = root / case
        return run_cli(*_arguments(case, tmp), cwd=tmp)

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {case: pool.submit(invoke, case) for case in CASES if case not in IN_PROCESS}
    return {case: (future.result(), root / case) for case, future in futures.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(outcomes, case, tmp_path, capsys):
    proc, tmp = (_in_process(case, tmp_path, capsys), tmp_path) if case in IN_PROCESS else outcomes[case]
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
    assert (record["status"], record["exit_code"], record["error"]["type"]) == ("error", 2, "ConfigError")
    assert key in record["error"]["key"]
    assert "sk-in-config" not in "".join(p.read_text() for p in run_dir.rglob("*") if p.suffix in (".yaml", ".json", ".jsonl"))


def test_full_hydra_error_still_gives_the_trace(tmp_path):
    proc = run_cli("grader=nope", cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"})
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "MissingConfigException" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: grader: ")
