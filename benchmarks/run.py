"""Benchmarks: the runner's own cost against the bare library and the ideal.

    .venv/bin/python benchmarks/run.py            # all, writes benchmarks/results/latest.json
    .venv/bin/python benchmarks/run.py --only startup,overhead   # updates only those figures
    .venv/bin/python benchmarks/run.py --only scale --tasks 10000   # the large-run figures (minutes)

Every figure is a median of several runs; comparisons are ratios taken side by side
in one process or one session, because the machines are noisy.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PYTHON = sys.executable
ENV = dict(os.environ)


def _interleaved(actions: dict, repeats: int, cpu: bool = True) -> dict:
    """Time each action ``repeats`` times, taking turns, so that load on the machine hits all alike.

    With ``cpu``, also the CPU time of this process (``cpu_median_s``): free of the noise of
    subprocesses and of other load, it shows what in-process code itself costs.
    """
    walls: dict = {name: [] for name in actions}
    cpus: dict = {name: [] for name in actions}
    for _ in range(repeats):
        for name, action in actions.items():
            cpu_started, started = time.process_time(), time.perf_counter()
            action()
            walls[name].append(time.perf_counter() - started)
            cpus[name].append(time.process_time() - cpu_started)
    return {
        name: {
            "median_s": round(statistics.median(walls[name]), 4),
            **({"cpu_median_s": round(statistics.median(cpus[name]), 4)} if cpu else {}),
            "samples_s": [round(t, 4) for t in walls[name]],
        }
        for name in actions
    }


def _verdict(result: str, passed: bool) -> dict:
    criterion = {"name": "All tests pass", "passed": passed, **({} if passed else {"gap": "a test fails"})}
    return {"tool_calls": [{"name": "GraderResponse", "args": {"result": result, "explanation": "graded", "criteria": [criterion]}}]}


CODE = "def find_duplicates(lst):\n    return [x for i, x in enumerate(lst) if x in lst[:i] and x not in lst[:lst.index(x)] + [x]]\n"


def three_iteration_script(path: Path) -> Path:
    """Worker answers three times; each grading pass calls run_test_suite once, then judges."""
    tool_turn = {"tool_calls": [{"name": "run_test_suite", "args": {"code": CODE}}]}
    script = {
        "worker": [{"content": CODE}] * 3,
        "grader": [tool_turn, _verdict("needs_revision", False), tool_turn, _verdict("needs_revision", False), tool_turn, _verdict("satisfied", True)],
    }
    path.write_text(yaml.safe_dump(script))
    return path


def latency_script(path: Path, latency: float) -> Path:
    """One worker call and one grader call per task, each taking ``latency`` seconds."""
    script = {"worker": [{"content": "x", "latency": latency}], "grader": [{**_verdict("satisfied", True), "latency": latency}]}
    path.write_text(yaml.safe_dump(script))
    return path


def dataset(path: Path, tasks: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n" for i in range(tasks)))
    return path


def run_as_cli(overrides: list[str], run_dir: Path):
    """``rubric_runner.run(overrides, run_dir)`` with the process-wide tweaks the command line opts in to."""
    import rubric_runner
    from rubric_runner.environment import process_tweaks

    with process_tweaks():
        return rubric_runner.run(overrides, run_dir)


def scripted(script: Path, *extra: str) -> list[str]:
    return ["worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}", "run.console=false", *extra]


def bench_overhead(tmp: Path, repeats: int) -> dict:
    """rubric_runner.run() in-process (its config composed each time) versus create_deep_agent +
    RubricMiddleware called directly."""
    from langgraph.checkpoint.memory import InMemorySaver

    from rubric_runner.models.scripted import ScriptedChatModel, load_script
    from rubric_runner.paths import DATA_DIR
    from rubric_runner.plugins.registry import bind_settings
    from rubric_runner.tools.builtin import run_test_suite

    warnings.simplefilter("ignore")
    from deepagents import RubricMiddleware, create_deep_agent
    from langchain_core.messages import HumanMessage

    script = three_iteration_script(tmp / "three.yaml")
    suite = DATA_DIR / "suites" / "find_duplicates.yaml"
    rubric = "- All tests pass in run_test_suite"
    task = "Write find_duplicates."

    def bare() -> None:
        worker = ScriptedChatModel(model="scripted:bench", turns=load_script(script, "worker")[0])
        grader = ScriptedChatModel(model="scripted:bench", turns=load_script(script, "grader")[0])
        tool = bind_settings(run_test_suite, {"suite": str(suite)}, "bench")
        agent = create_deep_agent(
            model=worker,
            system_prompt="You are a careful Python engineer.",
            middleware=[RubricMiddleware(model=grader, tools=[tool], max_iterations=3)],
            checkpointer=InMemorySaver(),
        )
        config = {"configurable": {"thread_id": "bench"}}
        agent.invoke({"messages": [HumanMessage(task)], "rubric": rubric}, config)
        assert agent.get_state(config).values["_rubric_status"] == "satisfied"

    counter = iter(range(10**6))

    def runner(checkpointer: str, *extra: str):
        overrides = scripted(script, "rubric=code", f"rubric.text={rubric}", f"rubric.task={task}",
                             f"run.checkpointer={checkpointer}", *extra)

        def once() -> None:
            result = run_as_cli(overrides, tmp / f"overhead-{next(counter)}")
            assert result.status == "satisfied" and result.grading_passes() == 3, result.error

        return once

    unverified = "~rubric.verify.run_test_suite"  # the bare script runs no hidden checks either
    bare()  # warm imports and caches on both sides before timing
    runner("memory", unverified)()
    rows = _interleaved({"bare": bare, "runner_memory": runner("memory", unverified),
                         "runner_sqlite": runner("sqlite", unverified), "runner_verify": runner("memory")}, repeats)
    for variant in ("memory", "sqlite", "verify"):
        runner = rows[f"runner_{variant}"]
        rows[f"ratio_{variant}"] = round(runner["median_s"] / rows["bare"]["median_s"], 3)
        rows[f"cpu_ratio_{variant}"] = round(runner["cpu_median_s"] / rows["bare"]["cpu_median_s"], 3)
    rows["target"] = "runner_memory / bare <= 1.10 (runner_verify adds rubric=code's hidden checks: two more sandboxed test runs)"
    return rows


def bench_startup(repeats: int) -> dict:
    """Start-up of the CLI against importing deepagents, in fresh interpreters."""
    commands = {
        "help": [PYTHON, "-m", "rubric_runner", "--help"],
        "cfg_job": [PYTHON, "-m", "rubric_runner", "--cfg", "job"],
        "import_deepagents": [PYTHON, "-c", "import deepagents"],
    }
    actions = {name: (lambda c=command: subprocess.run(c, env=ENV, capture_output=True, check=True)) for name, command in commands.items()}
    rows = _interleaved(actions, repeats, cpu=False)  # the work is in subprocesses
    for name in ("help", "cfg_job"):
        rows[f"ratio_{name}"] = round(rows[name]["median_s"] / rows["import_deepagents"]["median_s"], 3)
    rows["target"] = "help and cfg_job / import deepagents <= 0.5"
    return rows


NO_EVIDENCE = ("~grader.tools.count_syllables", "rubric.evidence=[]")
"""The default rubric (haiku) without its evidence rule, which has the grader call count_syllables before a
satisfied verdict: the benchmarks' scripted graders give their verdicts straight away."""


def task_set(stem: Path, tasks: int, concurrency: int, latency: float, *extra: str) -> list[str]:
    """The overrides of a run of ``tasks`` one-iteration scripted tasks at ``concurrency``, ``latency`` seconds
    per model call (the script and the task set written beside ``stem``)."""
    script = latency_script(stem.parent / f"{stem.name}.yaml", latency)
    data = dataset(stem.parent / f"{stem.name}.jsonl", tasks)
    return scripted(script, f"rubric.dataset={data}", f"run.concurrency={concurrency}", *NO_EVIDENCE, *extra)


def _multi_task_run(tmp: Path, name: str, tasks: int, concurrency: int, latency: float, *extra: str):
    """``task_set`` run in a new run dir under ``tmp``: the wall time (config composed, run, final reports
    written) and the run's record."""
    overrides = task_set(tmp / name, tasks, concurrency, latency, *extra)
    started = time.perf_counter()
    record = run_as_cli(overrides, tmp / f"{name}-{time.monotonic_ns()}")
    return time.perf_counter() - started, record


def _sqlite_saver(path: Path):
    """langgraph's ``SqliteSaver`` on a new file ``path`` for ``ainvoke``: its async methods run its sync ones
    in place (it has none of its own; ``AsyncSqliteSaver`` hops to a thread per statement), WAL without an
    fsync per commit. The same database work as the runner's SQLite checkpoints."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    class InPlaceSqliteSaver(SqliteSaver):
        async def aget_tuple(self, config):
            return self.get_tuple(config)

        async def aput(self, config, checkpoint, metadata, new_versions):
            return self.put(config, checkpoint, metadata, new_versions)

        async def aput_writes(self, config, writes, task_id, task_path=""):
            return self.put_writes(config, writes, task_id, task_path)

        async def aget_delta_channel_history(self, *, config, channels):
            return self.get_delta_channel_history(config=config, channels=channels)

    connection = sqlite3.connect(path, check_same_thread=False)
    connection.execute("PRAGMA synchronous=NORMAL")
    return InPlaceSqliteSaver(connection)


def _bare_concurrent(tasks: int, concurrency: int, latency: float, sqlite_dir: Path | None = None) -> float:
    """The same tasks through create_deep_agent + RubricMiddleware directly (asyncio, a semaphore); checkpoints
    in memory, or with ``sqlite_dir`` in a new SQLite file there. Returns the wall time."""
    import asyncio

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from rubric_runner.models.scripted import ScriptedChatModel

    warnings.simplefilter("ignore")
    from deepagents import RubricMiddleware, create_deep_agent

    worker = ScriptedChatModel(model="scripted:bench", turns=[{"content": "x", "latency": latency}])
    grader = ScriptedChatModel(model="scripted:bench", turns=[{**_verdict("satisfied", True), "latency": latency}])
    saver = InMemorySaver() if sqlite_dir is None else _sqlite_saver(sqlite_dir / f"bare-{time.monotonic_ns()}.sqlite")
    agent = create_deep_agent(model=worker, middleware=[RubricMiddleware(model=grader)], checkpointer=saver)

    async def main() -> None:
        limit = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with limit:
                task = {"messages": [HumanMessage(f"task {index}")], "rubric": "- All tests pass"}
                await agent.ainvoke(task, {"configurable": {"thread_id": f"t{index}"}})

        await asyncio.gather(*(one(index) for index in range(tasks)))

    started = time.perf_counter()
    asyncio.run(main())
    if sqlite_dir is not None:
        saver.conn.close()
    return time.perf_counter() - started


UNVERIFIED = "~rubric.verify.count_syllables"
"""The concurrency runs' override: the bare script runs no hidden checks either."""

SIDES = {"bare": "memory", "bare_sqlite": "sqlite", "runner_memory": "memory", "runner_sqlite": "sqlite"}
"""What the CPU and instruction figures compare: the bare library and the runner, each with memory and SQLite checkpoints."""


def no_latency_tasks(tmp: str, side: str, tasks: int, concurrency: int) -> None:
    """``tasks`` tasks with no model latency at ``concurrency``, through ``side`` (one of ``SIDES``); the runner
    without the rubric's hidden checks."""
    if side.startswith("bare"):
        _bare_concurrent(tasks, concurrency, 0.0, Path(tmp) if SIDES[side] == "sqlite" else None)
    else:
        _multi_task_run(Path(tmp), side, tasks, concurrency, 0.0, f"run.checkpointer={SIDES[side]}", UNVERIFIED)


def _cpu_seconds(action: Callable[..., Any], *args: Any) -> float:
    """The CPU time of this process, all its threads, while ``action(*args)`` runs; the garbage of
    what ran before is collected first, so no action pays for another's."""
    gc.collect()
    started = time.process_time()
    action(*args)
    return time.process_time() - started


def concurrency_cpu(tmp: str, tasks: int, concurrency: int, repeats: int) -> dict[str, list[float]]:
    """CPU seconds of ``tasks`` tasks with no latency, ``repeats`` times each side, interleaved. ``bench_concurrency``
    calls it in a fresh process, so what ran before in the benchmark's own process does not weigh on it."""
    for side in SIDES:
        no_latency_tasks(tmp, side, 4, 4)  # imports and first-use caches
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    for _ in range(repeats):
        for side in SIDES:
            cpu[side].append(_cpu_seconds(no_latency_tasks, tmp, side, tasks, concurrency))
    return cpu


def bench_concurrency(tmp: Path, repeats: int) -> dict:
    """64 tasks, 100 ms per model call, concurrency 16: against the ideal, concurrency 1 and the bare library
    (the runner without the rubric's hidden checks, which the bare script does not run); and the CPU
    time per task with no latency."""
    tasks, latency, concurrency = 64, 0.1, 16
    fresh = _in_fresh_process("concurrency_cpu", str(tmp), tasks, concurrency, repeats)
    cpu = {side: statistics.median(seconds) for side, seconds in fresh.items()}
    _multi_task_run(tmp, "warm", 4, 4, 0.0, UNVERIFIED)
    _bare_concurrent(4, 4, 0.0)
    walls, bare_walls, memory_walls = [], [], []
    for _ in range(repeats):
        wall, record = _multi_task_run(tmp, "c16", tasks, concurrency, latency, UNVERIFIED)
        assert record.aggregate.satisfied == tasks
        walls.append(wall)
        memory_walls.append(_multi_task_run(tmp, "c16m", tasks, concurrency, latency, "run.checkpointer=memory", UNVERIFIED)[0])
        bare_walls.append(_bare_concurrent(tasks, concurrency, latency))
    serial, record = _multi_task_run(tmp, "c1", tasks, 1, latency, UNVERIFIED)
    assert record.aggregate.satisfied == tasks
    total_latency = tasks * 2 * latency
    ideal = total_latency / concurrency
    wall = statistics.median(walls)
    bare, memory = statistics.median(bare_walls), statistics.median(memory_walls)
    return {
        "tasks": tasks,
        "latency_per_call_s": latency,
        "concurrency": concurrency,
        "wall_s": round(wall, 4),
        "samples_s": [round(w, 4) for w in walls],
        "ideal_s": round(ideal, 4),
        "ratio_to_ideal": round(wall / ideal, 3),
        "memory_checkpointer_wall_s": round(memory, 4),
        "memory_ratio_to_ideal": round(memory / ideal, 3),
        "bare_library_wall_s": round(bare, 4),
        "bare_ratio_to_ideal": round(bare / ideal, 3),
        **{f"cpu_ms_per_task_{side}": round(seconds / tasks * 1000, 2) for side, seconds in cpu.items()},
        "cpu_ratio_runner_memory": round(cpu["runner_memory"] / cpu["bare"], 3),
        "cpu_ratio_runner_sqlite": round(cpu["runner_sqlite"] / cpu["bare"], 3),
        "cpu_ratio_runner_sqlite_over_bare_sqlite": round(cpu["runner_sqlite"] / cpu["bare_sqlite"], 3),
        "concurrency_1_wall_s": round(serial, 4),
        "speedup_over_concurrency_1": round(serial / wall, 2),
        "target": "ratio_to_ideal <= 1.25 and speedup_over_concurrency_1 >= 10",
    }


def instructions_run(tmp: str, side: str, tasks: int) -> None:
    """What ``bench_instructions`` counts: a warm-up of 4 tasks, then ``tasks`` tasks at concurrency 16, through ``side``."""
    no_latency_tasks(tmp, side, 4, 4)
    no_latency_tasks(tmp, side, tasks, 16)


def _callgrind(tmp: Path, side: str, tasks: int) -> int:
    """The instructions a fresh process executes in ``instructions_run``, counted by callgrind (in all its
    threads; not in child processes). Each process works in a dir of its own: two runs of one side write
    task sets of the same name, and one must not run the other's."""
    work = tmp / f"{side}-{tasks}"
    work.mkdir()
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import run; run.instructions_run({str(work)!r}, {side!r}, {tasks})"
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / 'callgrind.out'}", PYTHON, "-c", code],
                          env={**ENV, "PYTHONHASHSEED": "0"}, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind of {side}, {tasks} tasks failed:\n{proc.stderr[-3000:]}")
    return int(found.group(1))


def bench_instructions(tmp: Path) -> dict:
    """Instructions per task, counted by callgrind over whole processes: a run of 80 tasks against one of 16,
    so start-up cancels out; the runner against the bare library, with memory and with SQLite checkpoints
    (64 no-latency tasks at concurrency 16, as ``bench_concurrency``'s CPU figures). Where timings are noisy,
    this count repeats to about 0.1%. Two processes at a time: each is single-threaded under valgrind."""
    if shutil.which("valgrind") is None:
        return {"skipped": "valgrind is not installed"}
    # bytecode first: a module compiled in one counted process and read in the other would move the count
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(ROOT / "rubric_runner"), str(ROOT / "benchmarks")], check=True)
    runs = [(side, tasks) for side in SIDES for tasks in (16, 80)]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(runs, pool.map(lambda run: _callgrind(tmp, *run), runs)))
    per_task = {side: (counts[side, 80] - counts[side, 16]) / 64 / 1e6 for side in SIDES}
    rows: dict = {}
    for checkpointer, bare, runner in (("memory", "bare", "runner_memory"), ("sqlite", "bare_sqlite", "runner_sqlite")):
        rows[checkpointer] = {
            "runner_m_instructions_per_task": round(per_task[runner], 2),
            "bare_m_instructions_per_task": round(per_task[bare], 2),
            "runner_over_bare": round(per_task[runner] / per_task[bare], 3),
            **{f"{name}_instructions_{tasks}_tasks": counts[side, tasks] for name, side in (("runner", runner), ("bare", bare)) for tasks in (16, 80)},
        }
    rows["target"] = "runner_over_bare <= 1.15 with memory checkpoints, <= 1.30 with SQLite"
    return rows


def bench_cache(tmp: Path, repeats: int) -> dict:
    """The 64-task run again with the response cache: how much faster, how many model calls."""
    cache = tmp / "cache.sqlite"
    cold, record = _multi_task_run(tmp, "cache", 64, 16, 0.1, f"run.cache={cache}")
    calls_cold = sum(record.task_usage()[role].calls for role in ("worker", "grader"))
    walls, calls_warm, hits = [], [], []
    for _ in range(repeats):
        wall, record = _multi_task_run(tmp, "cache", 64, 16, 0.1, f"run.cache={cache}")
        walls.append(wall)
        calls_warm.append(sum(record.task_usage()[role].calls for role in ("worker", "grader")))
        hits.append(record.aggregate.cache_hits)
    warm = statistics.median(walls)
    return {
        "cold_wall_s": round(cold, 4),
        "cold_model_calls": calls_cold,
        "cached_wall_s": round(warm, 4),
        "samples_s": [round(w, 4) for w in walls],
        "cached_model_calls": max(calls_warm),
        "cache_hits": min(hits),
        "speedup": round(cold / warm, 2),
        "target": "speedup >= 20 and cached_model_calls == 0",
    }


def bench_memory(tmp: Path) -> dict:
    """Peak RSS while running 64 and 256 tasks at concurrency 16, each in a fresh, warmed-up process."""
    rows: dict = {}
    for tasks in (64, 256):
        probe = _in_fresh_process("measured_task_run", str(tmp / f"mem{tasks}"), tasks, 16)
        rows[f"peak_rss_{tasks}_bytes"] = probe["peak_kib"] * 1024
        rows[f"growth_{tasks}_bytes"] = (probe["peak_kib"] - probe["baseline_kib"]) * 1024
    rows["growth_bytes_per_task_64"] = round(rows["growth_64_bytes"] / 64)
    rows["growth_bytes_per_task_256"] = round(rows["growth_256_bytes"] / 256)
    rows["marginal_bytes_per_task_64_to_256"] = round((rows["growth_256_bytes"] - rows["growth_64_bytes"]) / 192)
    return rows


def bench_sweep(tmp: Path) -> dict:
    """A 4-job multirun with scripted latency: the basic launcher versus joblib with n_jobs=2."""
    script = latency_script(tmp / "sweep.yaml", 0.5)
    base = ["-m", *scripted(script, *NO_EVIDENCE), "run.checkpointer=memory", "rubric.task=a,b,c,d"]
    rows = {}
    for name, extra in (("basic", []), ("joblib_n2", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"])):
        started = time.perf_counter()
        proc = subprocess.run([PYTHON, "-m", "rubric_runner", *base, *extra, f"hydra.sweep.dir={tmp / name}"],
                              env=ENV, capture_output=True, text=True)
        rows[name] = {"wall_s": round(time.perf_counter() - started, 4), "exit_code": proc.returncode}
    rows["ratio_joblib_over_basic"] = round(rows["joblib_n2"]["wall_s"] / rows["basic"]["wall_s"], 3)
    return rows


def bench_sandbox(repeats: int) -> dict:
    """Sandbox start-up per call, by isolation backend: the demo's pytest file, and a one-case table."""
    from rubric_runner.paths import DATA_DIR
    from rubric_runner.sandbox import (
        Limits,
        isolation_setting,
        run_cases,
        run_pytest,
        unavailable,
    )

    solution = yaml.safe_load((DATA_DIR / "scripts" / "code.yaml").read_text())["second_attempt"]
    tests = (DATA_DIR / "suites" / "test_find_duplicates.py").read_text()
    backends = [backend for backend in ("bwrap", "namespaces", "none") if unavailable(backend) is None]

    def call(backend: str, suite: str):
        def once() -> None:
            with isolation_setting(backend):
                if suite == "pytest":
                    result = run_pytest(solution, "solution", "test_find_duplicates.py", tests, Limits())
                else:
                    result = run_cases("def f():\n    return 1\n", "f", [{"name": "f", "expected": 1}], Limits())
            assert result["ok"] and result["isolation"] == backend, result

        return once

    for backend in backends:  # bubblewrap's one-time check, and warm file caches
        call(backend, "pytest")()
    actions = {f"{suite}_{backend}": call(backend, suite) for suite in ("pytest", "cases") for backend in backends}
    rows = _interleaved(actions, repeats, cpu=False)  # the work is in subprocesses
    rows["user"] = "root" if os.getuid() == 0 else "not root"
    if {"bwrap", "namespaces"} <= set(backends):
        for suite in ("pytest", "cases"):
            rows[f"ratio_bwrap_over_namespaces_{suite}"] = round(
                rows[f"{suite}_bwrap"]["median_s"] / rows[f"{suite}_namespaces"]["median_s"], 3
            )
    rows["target"] = "pytest_bwrap / pytest_namespaces <= 1.2"
    return rows


EXECUTE_TESTS = "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert 'a' * 2 == 'aa'\n"


def bench_execute(tmp: Path, repeats: int) -> dict:
    """The sandbox backend's ``execute`` (``TaskSandbox``: copy in, run, mirror back, in the task's session) of
    ``true`` and of a small pytest run, against the same command under a bare ``bwrap`` with the same binds,
    work dir and environment (pytest's plugin autoload off, as the sandbox has it); and a task's first
    command, which starts its session, against the bare ``true``."""
    from rubric_runner.context import CURRENT_TASK, TaskContext, TaskRef
    from rubric_runner.loop.backends import LIVE_DIR, TaskSandbox
    from rubric_runner.sandbox import bwrap, isolation_setting, pytest_path

    if bwrap.unavailable() is not None:
        return {"skipped": bwrap.unavailable()}
    task_dir = tmp / "execute-task"
    workspace = task_dir / LIVE_DIR
    workspace.mkdir(parents=True)
    (workspace / "test_small.py").write_text(EXECUTE_TESTS)
    site = pytest_path()
    path = f"{os.path.dirname(bwrap.python())}:/usr/local/bin:/usr/bin:/bin"
    commands = {"true": "true", "pytest": "python3 -m pytest -q -p no:cacheprovider test_small.py"}
    backend = TaskSandbox()
    context = TaskContext(TaskRef("execute", 0, str(task_dir), None), files_dir=str(workspace))
    CURRENT_TASK.set(context)

    def sandboxed(command: str):
        def once() -> None:
            with isolation_setting("bwrap"):
                answer = backend.execute(command)
            assert answer.exit_code == 0, answer

        return once

    def bare(command: str):
        argv = [*bwrap.command(shutil.which("bwrap"), [site])[:-1], "--bind", str(workspace), "/tmp/sandbox", "--chdir", "/tmp/sandbox",
                "--setenv", "PATH", path, "--setenv", "PYTHONPATH", site, "--setenv", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1", "/bin/sh", "-c", command]

        def once() -> None:
            subprocess.run(argv, env={}, capture_output=True, check=True)

        return once

    def first_command() -> None:
        if context.shell is not None:
            context.shell.close()
            context.shell = None
        sandboxed("true")()

    actions = {}
    for name, command in commands.items():
        actions[f"{name}_execute"], actions[f"{name}_bare_bwrap"] = sandboxed(command), bare(command)
    actions["first_command_execute"] = first_command
    for action in actions.values():  # bubblewrap's one-time check, and warm file caches
        action()
    rows = _interleaved(actions, repeats, cpu=False)  # the work is in subprocesses
    rows["user"] = "root" if os.getuid() == 0 else "not root"
    for name in commands:
        rows[f"ratio_{name}"] = round(rows[f"{name}_execute"]["median_s"] / rows[f"{name}_bare_bwrap"]["median_s"], 3)
    rows["ratio_first_command"] = round(rows["first_command_execute"]["median_s"] / rows["true_bare_bwrap"]["median_s"], 3)
    rows["target"] = "execute / bare bwrap <= 1.2, for true and for the small pytest run"
    context.shell.close()
    return rows


def scripted_task_run(run_dir: Path, tasks: int, concurrency: int = 32, *extra: str):
    """A run of ``tasks`` trivial one-iteration scripted tasks in ``run_dir`` (its script and task set
    beside it); with ``run.resume=true`` in ``extra``, that run resumed. Returns its ``RunRecord``.

    Other benchmarks reuse it for a large run dir to read (``report`` on a 10,000-task run).
    """
    return run_as_cli(task_set(run_dir, tasks, concurrency, 0.0, *extra), run_dir)


def _kib(field: str) -> int:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))


def measured_task_run(run_dir: str, tasks: int, concurrency: int, *extra: str) -> dict:
    """``scripted_task_run`` after a warm-up, with its wall time and this process's RSS before and at
    peak; and the part of each spent on the tasks (``TaskSet.run``: running them, or skipping them on
    resume), before the run's record and its final reports are written."""
    from rubric_runner.loop.run import TaskSet

    run_dir = Path(run_dir)
    scripted_task_run(run_dir.parent / f"warm-{time.monotonic_ns()}", 4, 4)  # imports and first-use caches
    baseline = _kib("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    tasks_part: dict = {}
    run_tasks = TaskSet.run

    async def timed(self, *args):
        tasks_started = time.perf_counter()
        try:
            return await run_tasks(self, *args)
        finally:
            tasks_part.update(tasks_s=time.perf_counter() - tasks_started, tasks_peak_kib=_kib("VmHWM:"))

    TaskSet.run = timed
    started = time.perf_counter()
    try:
        record = scripted_task_run(run_dir, tasks, concurrency, *extra)
    finally:
        TaskSet.run = run_tasks
    wall = time.perf_counter() - started
    assert record.aggregate is not None and record.aggregate.satisfied == tasks, record.aggregate
    return {"wall_s": round(wall, 3), "tasks_s": round(tasks_part["tasks_s"], 3), "baseline_kib": baseline,
            "tasks_peak_kib": tasks_part["tasks_peak_kib"], "peak_kib": _kib("VmHWM:"), "reused": record.aggregate.reused}


def _in_fresh_process(function: str, *args) -> dict:
    """``function(*args)`` of this module in a new interpreter; what it returns, as JSON."""
    code = f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import run; print(json.dumps(run.{function}(*{args!r})))"
    proc = subprocess.run([PYTHON, "-c", code], env=ENV, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{function}{args!r} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def disk_per_task(run_dir: Path, tasks: int) -> dict:
    """Bytes on disk per task: checkpoints (SQLite with its WAL), events, the task records (all else)."""
    sizes = {"checkpoints": 0, "events": 0, "records": 0}
    for path in run_dir.rglob("*"):
        if path.is_file():
            kind = "checkpoints" if path.name.startswith("checkpoints.sqlite") else "events" if path.name == "events.jsonl" else "records"
            sizes[kind] += path.stat().st_size
    return {f"{kind}_bytes_per_task": round(size / tasks) for kind, size in sizes.items()}


def _unstart(run_dir: Path, every: int) -> int:
    """Remove every ``every``-th task dir of a finished run, as if the run had stopped before those
    tasks started; how many were removed."""
    removed = sorted((run_dir / "tasks").iterdir())[::every]
    for task_dir in removed:
        shutil.rmtree(task_dir)
    return len(removed)


def bench_scale(tmp: Path, tasks: int) -> dict:
    """A ``tasks``-task scripted run at concurrency 32 (wall, peak RSS, bytes per task), memory growth per
    task against a run a tenth its size (at the peak of the whole run, and of its tasks alone: before
    the run's final reports read every task record), and resuming it when finished and when
    half-finished (the whole resumed run, and skipping or re-running its tasks alone)."""
    small = max(tasks // 10, 1)
    run_dir = tmp / f"scale-{tasks}"
    rows: dict = {"tasks": tasks, "concurrency": 32}
    probe_small = _in_fresh_process("measured_task_run", str(tmp / f"scale-{small}"), small, 32)
    probe = _in_fresh_process("measured_task_run", str(run_dir), tasks, 32)
    rows["wall_s"] = probe["wall_s"]
    rows["tasks_per_s"] = round(tasks / probe["wall_s"], 1)
    rows["peak_rss_bytes"] = probe["peak_kib"] * 1024
    growth, growth_small = (probe["peak_kib"] - probe["baseline_kib"]) * 1024, (probe_small["peak_kib"] - probe_small["baseline_kib"]) * 1024
    rows["growth_bytes_per_task"] = round(growth / tasks)
    rows[f"marginal_growth_bytes_per_task_{small}_to_{tasks}"] = round((growth - growth_small) / (tasks - small))
    during, during_small = (probe["tasks_peak_kib"] - probe["baseline_kib"]) * 1024, (probe_small["tasks_peak_kib"] - probe_small["baseline_kib"]) * 1024
    rows[f"marginal_growth_during_tasks_bytes_per_task_{small}_to_{tasks}"] = round((during - during_small) / (tasks - small))
    rows.update(disk_per_task(run_dir, tasks))
    resumed = _in_fresh_process("measured_task_run", str(run_dir), tasks, 32, "run.resume=true")
    assert resumed["reused"] == tasks, resumed
    rows["resume_finished_wall_s"] = resumed["wall_s"]
    rows["resume_finished_tasks_s"] = resumed["tasks_s"]
    rerun = _unstart(run_dir, 2)
    half = _in_fresh_process("measured_task_run", str(run_dir), tasks, 32, "run.resume=true")
    assert half["reused"] == tasks - rerun, half
    rows["resume_half_finished_wall_s"] = half["wall_s"]
    rows["resume_half_finished_tasks_s"] = half["tasks_s"]
    rows["resume_half_finished_rerun_tasks"] = rerun
    rows["target"] = "marginal growth <= 10 KB per task; resume_finished_wall_s <= 3 s"
    return rows


def realistic_script(path: Path) -> Path:
    """A dozen write_file steps of 4 KB (a ~50 KB transcript), then three answers and three grading passes."""
    note = "x" * 4000
    steps = [{"content": f"note {i}", "tool_calls": [{"name": "write_file", "args": {"file_path": f"/notes/{i}.md", "content": note}}]}
             for i in range(12)]
    script = {"worker": [*steps, {"content": "draft"}, {"content": "better"}, {"content": "final"}],
              "grader": [_verdict("needs_revision", False), _verdict("needs_revision", False), _verdict("satisfied", True)]}
    path.write_text(yaml.safe_dump(script))
    return path


def bench_checkpoint_bytes(tmp: Path) -> dict:
    """Checkpoint bytes of one realistic task, keeping every step's checkpoint and only the latest."""
    import sqlite3

    from rubric_runner.records import TRANSCRIPT_FILE

    script = realistic_script(tmp / "realistic.yaml")
    rows: dict = {}
    for keep in ("all", "latest"):
        overrides = scripted(script, *NO_EVIDENCE, f"run.keep_checkpoints={keep}")
        run_dir = tmp / f"realistic-{keep}"
        record = run_as_cli(overrides, run_dir)
        assert (record.status, record.grading_passes()) == ("satisfied", 3), record.error
        with sqlite3.connect(run_dir / "checkpoints.sqlite") as db:
            count, stored = db.execute("SELECT count(*), sum(length(checkpoint) + length(metadata)) FROM checkpoints").fetchone()
            stored += db.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
        rows[f"checkpoints_{keep}"] = count
        rows[f"stored_bytes_{keep}"] = stored
        rows[f"file_bytes_{keep}"] = sum(p.stat().st_size for p in run_dir.glob("checkpoints.sqlite*"))
        rows["transcript_bytes"] = (run_dir / TRANSCRIPT_FILE).stat().st_size
    rows["files_bytes"] = 12 * 4000
    rows["ratio_all_over_latest"] = round(rows["stored_bytes_all"] / rows["stored_bytes_latest"], 2)
    rows["ratio_latest_over_final_state"] = round(rows["stored_bytes_latest"] / (rows["transcript_bytes"] + rows["files_bytes"]), 2)
    rows["target"] = "stored_bytes_latest about the final state (transcript + files), whatever the number of steps"
    return rows


WORKSPACE_FILES, WORKSPACE_FILE_BYTES = 50, 10_000
"""The workspace benchmark's repo: 50 modules of about 10 KB, 500 KB in all."""


def workspace_repo(root: Path) -> Path:
    """A repo of ``WORKSPACE_FILES`` generated modules under ``pkg/``, each a header line and small functions
    with varied constants, about ``WORKSPACE_FILE_BYTES`` each."""
    import random

    for index in range(WORKSPACE_FILES):
        rng, parts, size = random.Random(index), [f'"""Module {index}: generated functions."""\n\n\n'], 0
        while size < WORKSPACE_FILE_BYTES:
            number = len(parts)
            part = (f"def scale_{index}_{number}(values, factor={rng.randint(2, 999)}):\n"
                    f"    return [value * factor + {rng.randint(0, 10**6)} for value in values if value > {rng.randint(-99, 99)}]\n\n\n")
            parts.append(part)
            size += len(part)
        path = root / "pkg" / f"mod_{index:02}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts))
    return root


NOTES = "".join(f"- step {i}: checked the module's header and its functions' constants.\n" for i in range(30))
"""The note the workspace benchmark's worker writes, about 2 KB."""


def workspace_script(path: Path) -> Path:
    """Each task's worker edits one module's header (``edit_file``) and writes ``/NOTES.md`` (``write_file``),
    then answers; its grader reads the note and is satisfied: one grading pass."""
    edit = {"file_path": "/pkg/mod_00.py", "old_string": "Module 0: generated functions.", "new_string": "Module 0: generated functions, checked."}
    script = {"worker": [{"tool_calls": [{"name": "edit_file", "args": edit}]},
                         {"tool_calls": [{"name": "write_file", "args": {"file_path": "/NOTES.md", "content": NOTES}}]},
                         {"content": "mod_00's header says it is checked; NOTES.md says what was."}],
              "grader": [{"tool_calls": [{"name": "read_file", "args": {"file_path": "/NOTES.md"}}]}, _verdict("satisfied", True)]}
    path.write_text(yaml.safe_dump(script))
    return path


def workspace_task_run(run_dir: Path, tasks: int, concurrency: int = 16, *extra: str):
    """A run of ``tasks`` tasks in ``run_dir`` whose dataset rows each name one 500 KB workspace (``workspace_repo``,
    written beside the run dir once), each task scripted by ``workspace_script``. Returns its ``RunRecord``."""
    base = run_dir.parent / "workspace-set"
    if not base.is_dir():
        workspace_repo(base / "repo")
        workspace_script(base / "script.yaml")
    rows = base / f"tasks-{tasks}.jsonl"
    rows.write_text("".join(json.dumps({"id": f"t{i}", "task": f"Check mod_00 ({i}) and note it.", "workspace": "repo"}) + "\n"
                            for i in range(tasks)))
    overrides = scripted(base / "script.yaml", f"rubric.dataset={rows}", "rubric.text=- All tests pass", "+grader.tools.read_file={}",
                         f"run.concurrency={concurrency}", *NO_EVIDENCE, UNVERIFIED, *extra)
    return run_as_cli(overrides, run_dir)


def _timed(owner: Any, name: str, spent: list[float]) -> Callable[[], None]:
    """Replace ``owner.name`` by a wrapper that adds the time of each call to ``spent``; the undo."""
    function = getattr(owner, name)

    def call(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    setattr(owner, name, call)
    return lambda: setattr(owner, name, function)


def measured_workspace_run(run_dir: str, tasks: int, *extra: str) -> dict:
    """``workspace_task_run`` after a warm-up, with this process's RSS before and at peak, and the time spent
    seeding: the seed's digest (``Workspace.digest``, once per workspace), putting each task's seed where its
    worker reads it (``backends.seed``) and keeping it in the run dir (``workspaces.keep_seed``), as the task
    run calls them; and apart, the time the checkpoints spend naming seed files and putting them back (``SeedRefs``)."""
    from functools import cached_property

    from rubric_runner.loop import task as task_run
    from rubric_runner.loop.seed_refs import SeedRefs
    from rubric_runner.tasks.workspace import Workspace

    run_dir = Path(run_dir)
    workspace_task_run(run_dir.parent / f"warm-{time.monotonic_ns()}", 4, 4, *extra)  # imports and first-use caches
    seeding: list[float] = []
    refs: list[float] = []
    digest, timed_digest = Workspace.__dict__["digest"], cached_property(Workspace.__dict__["digest"].func)
    timed_digest.__set_name__(Workspace, "digest")
    Workspace.digest = timed_digest
    undo = [lambda: setattr(Workspace, "digest", digest), _timed(timed_digest, "func", seeding),
            _timed(task_run, "seed", seeding), _timed(task_run, "keep_seed", seeding),
            _timed(SeedRefs, "named", refs), _timed(SeedRefs, "restored", refs)]
    gc.collect()
    baseline = _kib("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    started = time.perf_counter()
    try:
        record = workspace_task_run(run_dir, tasks, 16, *extra)
    finally:
        for step in reversed(undo):
            step()
    wall = time.perf_counter() - started
    assert record.aggregate is not None and record.aggregate.satisfied == tasks, record.aggregate
    return {"wall_s": round(wall, 3), "seeding_s": round(sum(seeding), 4), "seed_refs_s": round(sum(refs), 4),
            "seed_refs_calls": len(refs), "baseline_kib": baseline, "peak_kib": _kib("VmHWM:")}


def workspace_disk(run_dir: Path, tasks: int) -> dict:
    """Bytes under a run dir per task: checkpoints (SQLite with its WAL), seeds, the tasks' kept workspaces (and
    ``files/`` on a disk backend), and the rest (records, transcripts, events, reports); the first three together
    (``workspace_bytes_per_task``); and the bytes the workers changed: each task's changed files as they ended
    (what ``workspace/final/changes.json`` holds)."""
    sizes = {"checkpoints": 0, "seeds": 0, "kept_workspaces": 0, "records_events_reports": 0}
    for path in run_dir.rglob("*"):
        if path.is_file():
            parts = path.relative_to(run_dir).parts
            kind = ("checkpoints" if path.name.startswith("checkpoints.sqlite") else "seeds" if parts[0] == "seeds"
                    else "kept_workspaces" if len(parts) > 2 and parts[0] == "tasks" and parts[2] in ("workspace", "files")
                    else "records_events_reports")
            sizes[kind] += path.stat().st_size
    changed = sum(len(text.encode()) for final in run_dir.glob("tasks/*/workspace/final/changes.json")
                  for text in json.loads(final.read_text())["files"].values())
    per_task = {f"{kind}_bytes_per_task": round(size / tasks) for kind, size in sizes.items()}
    return {"changed_bytes_per_task": round(changed / tasks),
            "workspace_bytes_per_task": sum(per_task[f"{kind}_bytes_per_task"] for kind in ("checkpoints", "seeds", "kept_workspaces")),
            "run_dir_bytes_per_task": round(sum(sizes.values()) / tasks), **per_task}


def bench_workspace(tmp: Path, tasks: int = 100) -> dict:
    """A ``tasks``-task run on one 50-file, 500 KB workspace (``workspace_task_run``), in fresh processes: seeding
    time per task, disk per task against the bytes the workers changed, and memory growth per task against a
    run a tenth its size; and the same run's disk with ``worker.backend=filesystem`` and with memory checkpoints."""
    small = max(tasks // 10, 1)
    probe_small = _in_fresh_process("measured_workspace_run", str(tmp / f"workspace-{small}"), small)
    probe = _in_fresh_process("measured_workspace_run", str(tmp / f"workspace-{tasks}"), tasks)
    rows: dict = {"tasks": tasks, "concurrency": 16, "workspace_files": WORKSPACE_FILES,
                  "workspace_bytes": sum(path.stat().st_size for path in (tmp / "workspace-set" / "repo").rglob("*.py")),
                  "wall_s": probe["wall_s"], "peak_rss_bytes": probe["peak_kib"] * 1024}
    rows["seeding_ms_per_task"] = round(probe["seeding_s"] / tasks * 1000, 3)
    rows["checkpoint_seed_refs_ms_per_task"] = round(probe["seed_refs_s"] / tasks * 1000, 3)
    rows["checkpoint_seed_refs_calls_per_task"] = round(probe["seed_refs_calls"] / tasks, 1)
    rows.update(workspace_disk(tmp / f"workspace-{tasks}", tasks))
    rows["workspace_bytes_limit_per_task"] = 2 * rows["changed_bytes_per_task"] + 50_000
    for name, override in (("filesystem_backend", "worker.backend=filesystem"), ("memory_checkpoints", "run.checkpointer=memory")):
        workspace_task_run(tmp / f"workspace-{name}", tasks, 16, override)  # the same run's disk, on the other settings
        rows[name] = workspace_disk(tmp / f"workspace-{name}", tasks)
    growth, growth_small = ((probe["peak_kib"] - probe["baseline_kib"]) * 1024, (probe_small["peak_kib"] - probe_small["baseline_kib"]) * 1024)
    marginal = rows[f"marginal_growth_bytes_per_task_{small}_to_{tasks}"] = round((growth - growth_small) / (tasks - small))
    rows["target"] = ("seeding (with the checkpoints' seed references) <= 20 ms a task; workspace_bytes_per_task <= 2 x "
                      "changed_bytes_per_task + 50 KB; marginal growth <= 100 KB a task")
    rows["met"] = {"seeding": rows["seeding_ms_per_task"] + rows["checkpoint_seed_refs_ms_per_task"] <= 20,
                   "disk": rows["workspace_bytes_per_task"] <= rows["workspace_bytes_limit_per_task"],
                   "memory": marginal <= 100_000}
    return rows


def _many_runs():
    """tests/support/many_runs.py, the writer of records of many runs (no run takes place), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("many_runs", ROOT / "tests" / "support" / "many_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_report(tmp: Path, repeats: int) -> dict:
    """``rubric-runner report`` in a fresh process on a sweep of 10,000 single-task runs and on one run
    of 10,000 tasks (records written directly); report.html's bytes per row."""
    many_runs = _many_runs()
    rows_each = 10_000
    many_runs.write_run_sweep(tmp / "report-runs", rows_each)
    many_runs.write_task_sweep(tmp / "report-tasks", 1, rows_each)
    dirs = {"runs_10000": tmp / "report-runs", "tasks_10000": tmp / "report-tasks" / "0"}

    def report(report_dir: Path):
        def once() -> None:
            proc = subprocess.run([PYTHON, "-m", "rubric_runner", "report", str(report_dir)], env=ENV, capture_output=True, text=True)
            assert proc.returncode == 0 and proc.stdout.startswith(f"report: {rows_each} runs"), proc.stdout + proc.stderr

        return once

    load = os.getloadavg()[0]
    rows: dict = _interleaved({name: report(path) for name, path in dirs.items()}, repeats, cpu=False)  # the work is in subprocesses
    for name, path in dirs.items():
        html = (path / "report.html").stat().st_size
        rows[name].update(rows=rows_each, html_bytes=html, html_bytes_per_row=round(html / rows_each))
    rows["load_average_1min_before"], rows["load_average_1min_after"] = round(load, 2), round(os.getloadavg()[0], 2)
    rows["target"] = "report <= 5 s for 10,000 rows"
    return rows


def bench_attempt_checks(tmp: Path, repeats: int) -> dict:
    """Hidden checks of every attempt against the first and the final answer only: eight runs of rubric=code
    whose worker answers three different times (two revisions), timed interleaved."""
    answers = ["def find_duplicates(lst):\n    seen, out = set(), []\n    for x in lst:\n        if x in seen and x not in out:\n"
               "            out.append(x)\n        seen.add(x)\n    return out\n", CODE,
               "def find_duplicates(lst):\n    seen, out = [], []\n    for x in lst:\n        if x in seen and x not in out:\n"
               "            out.append(x)\n        seen.append(x)\n    return out\n"]
    script = tmp / "attempts.yaml"
    script.write_text(yaml.safe_dump({"worker": [{"content": answer} for answer in answers],
                                      "grader": [_verdict("needs_revision", False)] * 2 + [_verdict("satisfied", True)]}))
    base = ["rubric=code", *scripted(script, "rubric.evidence=[]", "run.repeats=8", "run.concurrency=8", "run.checkpointer=memory")]
    actions = {name: (lambda every=every: run_as_cli([*base, f"rubric.verify_every_attempt={every}"], tmp / f"checks-{time.monotonic_ns()}"))
               for name, every in (("every_attempt", "true"), ("first_and_final", "false"))}
    rows = _interleaved(actions, repeats, cpu=False)
    rows["checks_per_run"] = {"every_attempt": 3, "first_and_final": 2}
    rows["ratio_every_over_first_and_final"] = round(rows["every_attempt"]["median_s"] / rows["first_and_final"]["median_s"], 3)
    return rows


def bench_policies(tmp: Path, repeats: int) -> dict:
    """``rubric-runner policies`` in a fresh process on one run of 1,000 tasks whose every attempt was verified
    (records written directly), and the replay alone in this process on the runs it reads."""
    from rubric_runner.analysis.loop_value import basis
    from rubric_runner.analysis.policies import replay_all
    from rubric_runner.records import collect
    from rubric_runner.report.runs import expand

    tasks = 1000
    job_dir = tmp / "policies-run"
    _many_runs().write_verified_job(job_dir, tasks)

    def command() -> None:
        proc = subprocess.run([PYTHON, "-m", "rubric_runner", "policies", str(job_dir)], env=ENV, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith(f"policies: {tasks} runs"), proc.stdout + proc.stderr

    attempts = [run.attempted({}) for run in expand(collect(job_dir))]
    rows: dict = _interleaved({"command_1000_tasks": command,
                               "replay_only_1000_tasks": lambda: replay_all(attempts, basis(attempts))}, repeats, cpu=False)
    rows["policies_replayed"] = len(replay_all(attempts, basis(attempts)))
    rows["target"] = "replay of a 1,000-task run <= 5 s"
    return rows


BENCHES = ("startup", "overhead", "concurrency", "instructions", "cache", "memory", "sweep", "sandbox", "execute", "checkpoint_bytes",
           "scale", "report", "attempt_checks", "policies", "workspace")


def _table(results: dict) -> str:
    """Every number of the results, one line each (a nested figure's numbers under its name; samples left out)."""
    lines = [f"{'benchmark':<16} {'figure':<48} {'value':>14}", "-" * 80]
    for bench, rows in results["benchmarks"].items():
        for key, value in rows.items():
            inner = value.items() if isinstance(value, dict) else [("", value)]
            for name, number in inner:
                if isinstance(number, (int, float)) and not isinstance(number, bool):
                    lines.append(f"{bench:<16} {(key + ' ' + name).strip():<48} {number:>14}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated subset of " + ", ".join(BENCHES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks of the scale run")
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name]
    results = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "repeats": args.repeats,
        "benchmarks": {},
    }
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as scratch:
        tmp = Path(scratch)
        for name in chosen:
            if name == "startup":
                results["benchmarks"][name] = bench_startup(args.repeats)
            elif name == "overhead":
                results["benchmarks"][name] = bench_overhead(tmp, max(15, args.repeats))
            elif name == "concurrency":
                results["benchmarks"][name] = bench_concurrency(tmp, max(3, args.repeats // 2))
            elif name == "instructions":
                results["benchmarks"][name] = bench_instructions(tmp)
            elif name == "cache":
                results["benchmarks"][name] = bench_cache(tmp, args.repeats)
            elif name == "memory":
                results["benchmarks"][name] = bench_memory(tmp)
            elif name == "sweep":
                results["benchmarks"][name] = bench_sweep(tmp)
            elif name == "sandbox":
                results["benchmarks"][name] = bench_sandbox(max(15, args.repeats))
            elif name == "execute":
                results["benchmarks"][name] = bench_execute(tmp, max(15, args.repeats))
            elif name == "checkpoint_bytes":
                results["benchmarks"][name] = bench_checkpoint_bytes(tmp)
            elif name == "scale":
                results["benchmarks"][name] = bench_scale(tmp, args.tasks)
            elif name == "report":
                results["benchmarks"][name] = bench_report(tmp, max(3, args.repeats // 2))
            elif name == "attempt_checks":
                results["benchmarks"][name] = bench_attempt_checks(tmp, args.repeats)
            elif name == "policies":
                results["benchmarks"][name] = bench_policies(tmp, args.repeats)
            elif name == "workspace":
                results["benchmarks"][name] = bench_workspace(tmp)
            results["benchmarks"][name]["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            print(f"done: {name}", file=sys.stderr, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    latest = RESULTS / "latest.json"
    if latest.exists() and set(chosen) != set(BENCHES):  # a partial run updates only its own figures
        kept = json.loads(latest.read_text())["benchmarks"]
        results["benchmarks"] = {**kept, **results["benchmarks"]}
    latest.write_text(json.dumps(results, indent=2) + "\n")
    print(_table(results))


if __name__ == "__main__":
    main()
