"""No key in any file a run leaves or on the console: fake keys in the environment, fake providers that
echo them back in error bodies, every kind of run ending, and keys given in config (refused)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from support.helpers import SCRIPTED_EVIDENCE, run_cli
from support.wire import FAKE_KEYS, FakeServer, fault, model_overrides, text, verdict

CONFIG_KEY = "sk-given-in-config-0123456789abcdef"
OK = verdict("satisfied", ("c", True))
UNAUTHORIZED = fault(401, "unauthorized", retry_after=None)

# id: (worker turns, grader turns, extra arguments, exit code)
RUNS = {
    "satisfied": ([text("the answer")], [OK], [], 0),
    "grader_error": ([text("the answer")], [UNAUTHORIZED], [], 3),
    "error": ([UNAUTHORIZED], [], [], 3),
    "config_error_kwargs": ([], [], [f"+worker.kwargs.api_key={CONFIG_KEY}"], 2),
    "config_error_appended": ([], [], [f"+grader.api_key={CONFIG_KEY}"], 2),
    "config_error_override": ([], [], [f"worker.api_key={CONFIG_KEY}"], 2),
    "config_error_in_user_config": ([], [], ["--config-dir", "{tmp}/user_conf", "grader=mine"], 2),
}
SAVED_BEFORE_REFUSAL = {"config_error_kwargs", "config_error_appended", "config_error_in_user_config"}


def _run(name: str, root) -> tuple:
    worker_turns, grader_turns, extra, _ = RUNS[name]
    tmp = root / name
    (tmp / "user_conf" / "grader").mkdir(parents=True)
    (tmp / "user_conf" / "grader" / "mine.yaml").write_text(
        f"defaults:\n  - /model/gpt@_here_\nkwargs:\n  api_key: {CONFIG_KEY}\n"
    )
    worker = FakeServer("openai", worker_turns, echo_key=True)
    grader = FakeServer("anthropic", grader_turns, echo_key=True)
    with worker, grader:
        extra = [arg.replace("{tmp}", str(tmp)) for arg in extra]
        flags = extra[:2] if extra and extra[0].startswith("--") else []
        args = [
            *flags,
            *model_overrides("worker", worker, max_retries=0),
            *model_overrides("grader", grader, max_retries=0),
            SCRIPTED_EVIDENCE,
            *extra[len(flags):],
            f"hydra.run.dir={tmp}/run",
        ]
        proc = run_cli(*args, cwd=tmp, env=FAKE_KEYS)
    return proc, tmp, worker, grader


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("secrets")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_run, name, root) for name in RUNS}
    return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", list(RUNS))
def test_no_key_is_left_anywhere(runs, name):
    proc, tmp, worker, grader = runs[name]
    assert proc.returncode == RUNS[name][3], proc.stderr
    if name in ("grader_error", "error"):  # the provider was sent the key, and quoted it back
        assert (worker if name == "error" else grader).requests[-1].key in FAKE_KEYS.values()
    files = [path for path in (tmp / "run").rglob("*") if path.is_file()]
    assert files or name == "config_error_override"  # a command line Hydra rejects leaves no run dir
    for secret in (*FAKE_KEYS.values(), CONFIG_KEY):
        assert secret not in proc.stdout + proc.stderr
        for path in files:
            assert secret.encode() not in path.read_bytes(), path
    if name in SAVED_BEFORE_REFUSAL:  # Hydra saved these before the run refused them: scrubbed since
        assert "[REDACTED]" in (tmp / "run" / ".hydra" / "config.yaml").read_text()


def test_error_bodies_are_redacted_not_dropped(runs):
    proc, tmp, _, _ = runs["grader_error"]
    assert "unauthorized: invalid key [REDACTED]" in (tmp / "run" / "result.json").read_text()
    assert "[REDACTED]" in proc.stderr


def test_no_key_in_a_sweep_its_summary_reports_cache_and_regrades(tmp_path, monkeypatch, capsys):
    import json

    from rubric_runner.cli import run_command

    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n" for i in range(2)))
    sweep_dir, cache = tmp_path / "sweep", tmp_path / "sweep" / "cache.sqlite"
    worker = FakeServer("openai", [UNAUTHORIZED, *[text("the answer")] * 5], echo_key=True)
    grader = FakeServer("anthropic", [OK] * 9, echo_key=True)
    outputs = []
    with worker, grader:
        common = [*model_overrides("worker", worker, max_retries=0), *model_overrides("grader", grader, max_retries=0),
                  SCRIPTED_EVIDENCE]
        sweep = run_cli("-m", *common, f"rubric.dataset={data}", "run.repeats=1,2", "run.concurrency=1",
                        f"run.cache={cache}", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, env=FAKE_KEYS)
        outputs.append(sweep.stdout + sweep.stderr)
        assert sweep.returncode == 3, sweep.stderr  # job 0 has a task the provider refused
        assert worker.requests[0].key in FAKE_KEYS.values()
        for name, value in FAKE_KEYS.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        assert run_command(["regrade", str(sweep_dir / "1")]) == 0
    assert run_command(["report", str(sweep_dir)]) == 0
    outputs.append("".join(capsys.readouterr()))
    files = [path for path in tmp_path.rglob("*") if path.is_file() and path != data]
    names = {path.name for path in files}
    assert {"summary.jsonl", "summary.csv", "report.md", "report.html", "cache.sqlite", "multirun.yaml"} <= names
    assert len(list(sweep_dir.glob("1/regrades/*/tasks/*/result.json"))) == 4
    for secret in FAKE_KEYS.values():
        for output in outputs:
            assert secret not in output
        for path in files:
            assert secret.encode() not in path.read_bytes(), path
