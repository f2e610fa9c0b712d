"""What the tests share: the checkout's root, composed configs, scripted-model scripts and task sets,
runs in-process and in real subprocesses, and their events."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir

import rubric_runner
from rubric_runner.config.compose import register_configs
from rubric_runner.paths import CONF_DIR

register_configs()
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
"""The tests' own data (``code_task_solutions.py``, importable: conftest puts it on the path)."""
BUNDLED_PLUGINS = "syllables,textstats"
"""The plugins shipped in plugins/ (installed by scripts/setup): the haiku and summary rubrics use them."""


def compose_config(overrides: list[str] | None = None):
    """The config ``python -m rubric_runner OVERRIDES`` would run with."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides or []))


def verdict(result: str, *criteria: tuple[str, bool], explanation: str = "graded") -> dict[str, Any]:
    """A scripted grader turn returning a GraderResponse."""
    items = [
        {"name": name, "passed": passed} if passed else {"name": name, "passed": False, "gap": f"fix {name}"}
        for name, passed in criteria
    ]
    return {"tool_calls": [{"name": "GraderResponse", "args": {"result": result, "explanation": explanation, "criteria": items}}]}


def write_script(path: Path, worker: list[dict], grader: list[dict], tasks: dict | None = None) -> Path:
    """Write a scripted-model file with ``worker:`` and ``grader:`` sections (and per-task ones)."""
    data = {"worker": worker, "grader": grader, **({"tasks": tasks} if tasks else {})}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def write_dataset(path: Path, ids: list[str]) -> Path:
    """Write a JSONL task set: one task ``do <id>`` per id."""
    path.write_text("".join(json.dumps({"id": i, "task": f"do {i}"}) + "\n" for i in ids))
    return path


SCRIPTED_EVIDENCE = "rubric.evidence=[]"
"""A test's grader turns rest on no tool call unless the test says so: the default rubric's (haiku's)
rule that a satisfied verdict rests on count_syllables is left out (tests of that rule set it)."""


def scripted_overrides(script: Path, *extra: str) -> list[str]:
    """Overrides for a fully scripted run replaying ``script``."""
    return ["worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}", "run.console=false",
            SCRIPTED_EVIDENCE, *extra]


def next_turn_overrides(path: Path, explanation: str) -> list[str]:
    """Overrides for a follow-up turn on a fixture's scripted thread (two worker replies before it) that
    answers with an empty ``find_duplicates`` and is satisfied on criterion ``c``."""
    script = write_script(path, worker=[*[{"content": "(an earlier turn's)"}] * 2,
                                        {"content": "def find_duplicates(lst):\n    return []"}],
                          grader=[verdict("satisfied", ("c", True), explanation=explanation)])
    return [f"worker.script={script}", f"grader.script={script}", "run.console=false", SCRIPTED_EVIDENCE, "rubric.text=- c"]


def run_scripted(tmp_path: Path, script: Path, *extra: str):
    """Run in-process with scripted models; returns (result, run_dir)."""
    overrides = scripted_overrides(script, *extra)
    run_dir = tmp_path / "run"
    return rubric_runner.run(overrides, run_dir), run_dir


def run_in_process(tmp_path: Path, *overrides: str):
    """Run in-process with ``overrides`` (console off); returns (result, run_dir)."""
    overrides = ("run.console=false", SCRIPTED_EVIDENCE, *overrides)
    run_dir = tmp_path / "run"
    return rubric_runner.run(list(overrides), run_dir), run_dir


def only_task(record: Any) -> Any:
    """The task record of a run of one task (``record``: the run's ``RunRecord``, or its dir)."""
    from rubric_runner.records import load_record, task_records

    run = load_record(Path(record)) if isinstance(record, str | Path) else record
    if isinstance(record, str | Path):
        run.run_dir = str(record)
    (task,) = task_records(run)
    return task


def task_dir_of(run_dir: Path) -> Path:
    """The one task dir of a run of one task."""
    (path,) = (Path(run_dir) / "tasks").iterdir()
    return path


def task_json(run_dir: Path) -> dict[str, Any]:
    """The ``result.json`` of a run of one task's task, as JSON."""
    return json.loads((task_dir_of(run_dir) / "result.json").read_text())


def run_json(run_dir: Path) -> dict[str, Any]:
    """A run's ``result.json``, with its one task's record under ``"task"`` (None when it has none or several);
    a task's dir: its own record, as it is."""
    data = json.loads((Path(run_dir) / "result.json").read_text())
    if Path(run_dir).parent.name == "tasks":
        return data
    tasks = sorted((Path(run_dir) / "tasks").glob("*/result.json"))
    return {**data, "task": json.loads(tasks[0].read_text()) if len(tasks) == 1 else None}


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """Every line of the run's events.jsonl, parsed."""
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m rubric_runner ARGS`` in a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "rubric_runner", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def cli_process(*args: str, cwd: Path, env: dict[str, str] | None = None, group: bool = False) -> Iterator[subprocess.Popen]:
    """``python -m rubric_runner ARGS`` in the background (``env``: added to this one's), output piped; killed
    on the way out if still running. ``group``: in a process group of its own, which ``os.killpg(proc.pid, ...)``
    signals whole, as a terminal's Ctrl-C does."""
    proc = subprocess.Popen([sys.executable, "-m", "rubric_runner", *args], cwd=cwd, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0 if group else None)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def on_terminal(args: list[str], cwd: Path) -> tuple[int, bytes]:
    """``python -m rubric_runner ARGS`` with stderr on a pseudo-terminal (stdout piped): its exit code
    and what the terminal showed."""
    import pty

    primary, secondary = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "rubric_runner", *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=secondary, timeout=120)
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    return proc.returncode, shown


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_pytest(site: Path) -> Path:
    """Copy pytest and the packages it imports into ``site`` (a stand-alone site-packages dir)."""
    import shutil

    from rubric_runner.sandbox import pytest_path

    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py"):
        source = Path(pytest_path()) / name
        if source.is_dir():
            shutil.copytree(source, site / name)
        elif source.exists():
            shutil.copy2(source, site / name)
    return site


def md_table(text: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table after ``heading``, a dict per row keyed by its header."""
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return [dict(zip(table[0], row, strict=True)) for row in table[2:]]
