"""Limits per task (worker calls, worker tokens, total tokens, wall seconds) and budgets per run and
per sweep (tokens, USD), enforced at the model calls; what they leave in records, reports and resume."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from support.helpers import (
    compose_config,
    only_task,
    read_events,
    run_cli,
    run_scripted,
    scripted_overrides,
    task_dir_of,
    verdict,
    write_dataset,
    write_script,
)

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.config.validate import validate
from rubric_runner.errors import UsageError
from rubric_runner.records import ExitCode, Status, read_record, read_task

OK = verdict("satisfied", ("c", True))
HUNDRED = {"input_tokens": 60, "output_tokens": 40}
"""Scripted usage: 100 tokens a call."""


def _run(tmp_path: Path, script: Path, *extra: str, name: str = "run"):
    """A scripted run in ``tmp_path/name``; returns (record, run dir)."""
    return run_scripted(tmp_path / name, script, *extra)


def _md_rows(text: str) -> list[list[str]]:
    """The rows of report.md's tables whose second cell is a task id."""
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in text.splitlines() if line.startswith("| ")]
    return [row for row in rows if len(row) > 1 and row[1] in TASK_IDS]


TASK_IDS = {"fast1", "slow", "fast2", *(f"t{i:02}" for i in range(20))}


def _tasks(run_dir: Path) -> dict[str, object]:
    return {path.parent.name: read_task(path) for path in sorted(run_dir.glob("tasks/*/result.json"))}


@pytest.mark.parametrize("key", ["limits.worker_calls", "limits.total_tokens", "limits.wall_seconds", "run.budget_usd",
                                 "sweep.budget_tokens"])
def test_a_limit_must_be_positive(key):
    with pytest.raises(UsageError) as caught:
        validate(compose_config(["worker=scripted", "grader=scripted", f"{key}=0"]))
    assert caught.value.key == key and f"e.g. {key}=" in str(caught.value)


def test_a_worker_calling_a_tool_forever_stops_at_its_call_limit(tmp_path):
    forever = [{"tool_calls": [{"name": "ls", "args": {"path": "/"}}], "usage": HUNDRED}] * 2000
    script = write_script(tmp_path / "s.yaml", worker=forever, grader=[OK])
    started = time.monotonic()
    record, run_dir = _run(tmp_path, script, "limits.worker_calls=5")
    assert time.monotonic() - started < 30
    assert (record.status, record.exit_code) == (Status.LIMIT_EXCEEDED, ExitCode.UNSATISFIED)
    assert only_task(record).limit.model_dump() == {"name": "limits.worker_calls", "limit": 5, "value": 5}
    assert record.error.message == "limits.worker_calls reached: 5 of 5"
    assert only_task(record).usage["worker"].calls == 5 and only_task(record).usage["grader"].calls == 0
    messages = json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"]
    assert [m["type"] for m in messages].count("tool") == 5  # the transcript so far is kept
    assert only_task(run_dir).limit == only_task(record).limit


def test_worker_tokens_stop_the_worker_and_total_tokens_the_grader(tmp_path):
    turn = {"content": "draft", "usage": HUNDRED}
    revise = {**verdict("needs_revision", ("c", False)), "usage": HUNDRED}
    script = write_script(tmp_path / "s.yaml", worker=[turn] * 5, grader=[revise] * 5)
    by_worker, _ = _run(tmp_path, script, "limits.worker_tokens=250", "grader.max_iterations=9", name="worker")
    # worker, grader, worker, grader, worker (300 worker tokens), then the 4th worker call is refused
    assert by_worker.status is Status.LIMIT_EXCEEDED
    assert only_task(by_worker).limit.model_dump() == {"name": "limits.worker_tokens", "limit": 250, "value": 300}
    assert [e.result for e in only_task(by_worker).evaluations] == ["needs_revision"] * 3  # the evaluations so far are kept
    by_total, _ = _run(tmp_path, script, "limits.total_tokens=300", "grader.max_iterations=9", name="total")
    # worker, grader, worker: 300 tokens, so the second grading pass's call is refused
    assert by_total.status is Status.LIMIT_EXCEEDED
    assert only_task(by_total).limit.model_dump() == {"name": "limits.total_tokens", "limit": 300, "value": 300}
    assert [e.result for e in only_task(by_total).evaluations] == ["needs_revision"]  # no grader_error recorded for it
    assert only_task(by_total).usage["grader"].calls == 1


def test_a_task_over_its_wall_clock_limit_ends_so_and_the_others_finish(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.1}], grader=[OK],
                          tasks={"slow": {"worker": [{"content": "x", "latency": 30}]}})
    data = write_dataset(tmp_path / "tasks.jsonl", ["fast1", "slow", "fast2"])
    started = time.monotonic()
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", "run.concurrency=3", "limits.wall_seconds=1.5")
    assert time.monotonic() - started < 20
    tasks = _tasks(run_dir)
    assert [tasks[key].status for key in ("fast1-r0", "fast2-r0")] == [Status.SATISFIED] * 2
    slow = tasks["slow-r0"]
    assert slow.status is Status.LIMIT_EXCEEDED and slow.limit.name == "limits.wall_seconds"
    assert 1.5 <= slow.limit.value < 10 and slow.limit.limit == 1.5
    assert (run_dir / "tasks" / "slow-r0" / "transcript.json").is_file()
    assert record.status is Status.LIMIT_EXCEEDED and record.aggregate.statuses == {"satisfied": 2, "limit_exceeded": 1}
    # the run's own report counts each task, and the matrix says which task the model missed
    report = (run_dir / "report.md").read_text()
    assert "3 runs in 1 job: 2 satisfied, 1 limit_exceeded; satisfied rate 66.7%" in report
    assert {row[1]: row[2:] for row in _md_rows(report) if len(row) == 4} == {
        "fast1": ["1/1", "-"], "slow": ["0/1", "scripted:demo / scripted:demo / haiku"], "fast2": ["1/1", "-"]}
    stopped = [row for row in _md_rows(report) if "limits.wall_seconds" in " ".join(row)]
    assert [row[1] for row in stopped] == ["slow"]


HANGING_TOOL = """
import time
from langchain_core.tools import tool

@tool
def wait_forever(text: str) -> str:
    \"\"\"Never answers.\"\"\"
    while True:
        time.sleep(1)
"""


@pytest.mark.parametrize("role", ["worker", "grader"])
def test_a_tool_that_never_returns_ends_at_the_wall_clock_limit_and_the_process_exits(tmp_path, role):
    (tmp_path / "hanging_tools.py").write_text(HANGING_TOOL)
    call = {"tool_calls": [{"name": "wait_forever", "args": {"text": "hi"}}]}
    worker, grader = ([call], [OK]) if role == "worker" else ([{"content": "answer"}], [call])
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=grader)
    run_dir = tmp_path / "run"
    started = time.monotonic()
    done = run_cli(*scripted_overrides(script), f"+{role}.tools={{hanging_tools.wait_forever: {{}}}}",
                   "limits.wall_seconds=2", f"hydra.run.dir={run_dir}", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)},
                   timeout=60)
    # the tool never returns: a process that waited for its thread would run into run_cli's 60 s timeout
    # (this takes 8-9 s on an idle 2-core machine, 20-23 s beside the whole suite)
    assert time.monotonic() - started < 45, "the process waited for the tool's thread"
    assert done.returncode == ExitCode.UNSATISFIED, done.stderr
    assert "Traceback" not in done.stderr
    record = read_record(run_dir / "result.json")
    assert record.status is Status.LIMIT_EXCEEDED and only_task(record).limit.name == "limits.wall_seconds"
    assert [e["tool"] for e in read_events(run_dir) if e["event"] == "tool_call_start"] == ["wait_forever"]


def test_a_budget_for_eight_of_twenty_tasks_then_resume_with_a_larger_one(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "usage": HUNDRED}], grader=[{**OK, "usage": HUNDRED}])
    data = write_dataset(tmp_path / "tasks.jsonl", [f"t{i:02}" for i in range(20)])
    extra = (f"rubric.dataset={data}", "run.concurrency=2")
    record, run_dir = _run(tmp_path, script, *extra, "run.budget_tokens=1600")  # 200 tokens a task: 8 tasks' worth
    statuses = {key: task.status for key, task in _tasks(run_dir).items()}
    done = [key for key, status in statuses.items() if status is Status.SATISFIED]
    not_run = [key for key, status in statuses.items() if status is Status.NOT_RUN]
    cut = [key for key, status in statuses.items() if status is Status.BUDGET_EXCEEDED]
    assert 7 <= len(done) <= 9 and len(done) + len(not_run) + len(cut) == 20 and len(not_run) >= 10
    assert (record.status, record.exit_code) == (Status.BUDGET_EXCEEDED, ExitCode.BUDGET_EXCEEDED)
    (budget,) = record.budgets
    assert (budget.scope, budget.tokens, budget.reached) == ("run", 1600, True)
    assert budget.spent_tokens == sum(u.total_tokens for u in record.aggregate.usage.values()) >= 1600
    never = read_task(run_dir / "tasks" / not_run[0] / "result.json")
    assert never.usage["worker"].calls == 0 and never.limit.name == "run.budget_tokens"
    summary = [e for e in read_events(run_dir) if e["event"] == "run_end"]
    assert summary and summary[0]["status"] == "budget_exceeded"

    assert run_command(["report", str(run_dir)]) == 0
    text = (run_dir / "report.md").read_text()
    assert f"Run budget: spent {budget.spent_tokens:,}/1,600 tokens (reached)." in text
    assert f"Left undone by the budget: {len(not_run)} task(s) not run, {len(cut)} cut short" in text
    verdict_line = text.split("20 runs in 1 job: ")[1].split(";")[0]
    assert sorted(verdict_line.split(", ")) == sorted(
        f"{n} {status}" for status, n in (("satisfied", len(done)), ("not_run", len(not_run)), ("budget_exceeded", len(cut))) if n)
    rows = [json.loads(line) for line in (run_dir / "summary_tasks.jsonl").read_text().splitlines()]
    assert {f"{r['task_id']}-r{r['repeat']}": r["status"] for r in rows} == {k: v.value for k, v in statuses.items()}
    matrix = {row[1]: row[2:] for row in _md_rows(text) if len(row) == 4}
    assert matrix == {key[:-3]: ["1/1" if key in done else "0/1, 1 undone", "-"] for key in statuses}, \
        "a task the budget stopped is undone, not missed"

    again, _ = _run(tmp_path, script, *extra, "run.resume=true", "run.budget_tokens=10000")
    assert again.status is Status.SATISFIED and again.aggregate.satisfied == 20
    assert (again.aggregate.reused, again.aggregate.rerun) == (len(done), 20 - len(done))
    # nothing done twice: one worker and one grader call per task in all
    assert again.aggregate.usage["worker"].calls == 20 and again.aggregate.usage["grader"].calls == 20
    assert again.budgets[0].spent_tokens == 4000 and not again.budgets[0].reached


def test_tasks_in_flight_finish_their_call_and_resume_from_there(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.3, "usage": HUNDRED}],
                          grader=[{**OK, "usage": HUNDRED}])
    data = write_dataset(tmp_path / "tasks.jsonl", ["a", "b", "c", "d"])
    extra = (f"rubric.dataset={data}", "run.concurrency=4")
    record, run_dir = _run(tmp_path, script, *extra, "run.budget_tokens=300")
    # all four worker calls were under way when the budget was reached: each ends, its grading is refused
    assert record.aggregate.statuses == {"budget_exceeded": 4}
    for task in _tasks(run_dir).values():
        assert task.usage["worker"].calls == 1 and task.usage["grader"].calls == 0 and task.final_answer == "x"
    again, _ = _run(tmp_path, script, *extra, "run.resume=true", "run.budget_tokens=1000")
    assert again.aggregate.satisfied == 4
    assert again.aggregate.usage["worker"].calls == 4 and again.aggregate.usage["grader"].calls == 4  # graded, the worker not asked again


def test_cached_calls_do_not_consume_the_budget(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "usage": HUNDRED}], grader=[{**OK, "usage": HUNDRED}])
    data = write_dataset(tmp_path / "tasks.jsonl", [f"t{i}" for i in range(6)])
    extra = (f"rubric.dataset={data}", f"run.cache={tmp_path / 'cache.sqlite'}")
    first, _ = _run(tmp_path, script, *extra, name="first")
    assert first.status is Status.SATISFIED and first.aggregate.usage["worker"].total_tokens == 600
    second, _ = _run(tmp_path, script, *extra, "run.budget_tokens=200", name="second")
    assert second.status is Status.SATISFIED and second.aggregate.cache_hits == 12
    assert second.budgets[0].spent_tokens == 0 and not second.budgets[0].reached


def _prices(path: Path, models: list[str]) -> Path:
    path.write_text(yaml.safe_dump({model: {"input": 1000.0, "output": 1000.0} for model in models}))
    return path


def test_a_usd_budget_with_an_unpriced_model_is_refused_before_anything_runs(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    prices = _prices(tmp_path / "prices.yaml", ["scripted:alpha", "scripted:demo"])
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", *scripted_overrides(script), "worker.model=scripted:alpha,scripted:beta", f"sweep.prices={prices}",
                   "sweep.budget_usd=1", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.strip().splitlines() == [
        f"error: sweep.budget_usd: scripted:beta (worker.model) has no price in {prices} "
        "(add it to the price table (sweep.prices=FILE), or budget in tokens: sweep.budget_tokens)"
    ]
    assert not sweep_dir.exists()
    single, run_dir = _run(tmp_path, script, "worker.model=scripted:beta", f"sweep.prices={prices}", "run.budget_usd=1")
    assert single.exit_code == ExitCode.USAGE and single.error.key == "run.budget_usd"
    assert not list(run_dir.glob("**/transcript.json"))


def test_a_sweep_budget_is_shared_by_jobs_in_other_processes_and_resume_finishes_it(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.5, "usage": HUNDRED}],
                          grader=[{**OK, "usage": HUNDRED}])
    models = [f"scripted:m{i}" for i in range(4)]
    prices = _prices(tmp_path / "prices.yaml", [*models, "scripted:demo"])  # 0.1 USD a call, 0.2 a job
    sweep_dir = tmp_path / "sweep"
    common = ["-m", *scripted_overrides(script), f"worker.model={','.join(models)}", f"sweep.prices={prices}",
              f"hydra.sweep.dir={sweep_dir}"]
    proc = run_cli(*common, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "sweep.budget_usd=0.4", cwd=tmp_path, timeout=300)
    # jobs 0 and 1 run in two processes (0.4 USD); jobs 2 and 3 find the budget spent when they start
    assert proc.returncode == ExitCode.BUDGET_EXCEEDED, proc.stderr
    rows = [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["satisfied", "satisfied", "not_run", "not_run"]
    assert "Sweep budget: spent 0.4000/0.4000 USD (reached)" in proc.stdout
    report = (sweep_dir / "report.md").read_text()
    assert "Left undone by the budget: 2 task(s) not run, 0 cut short" in report
    assert report.count("| sweep.budget_usd 0.4/0.4 |") == 2  # the runs table's "stopped by"
    assert (sweep_dir / "spend.sqlite").is_file()

    resumed = run_cli(*common, "sweep.budget_usd=1", "run.resume=true", cwd=tmp_path, timeout=300)  # basic launcher
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["satisfied"] * 4 and [row["reused"] for row in rows] == [1, 1, 0, 0]
    assert "Sweep budget: spent 0.8000/1.0000 USD" in resumed.stdout


def test_the_progress_line_shows_the_spend_against_the_budget(tmp_path, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "usage": HUNDRED}], grader=[{**OK, "usage": HUNDRED}])
    data = write_dataset(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    overrides = [o for o in scripted_overrides(script, f"rubric.dataset={data}", "run.concurrency=1", "run.budget_tokens=5000")
                 if o != "run.console=false"]
    rubric_runner.run(overrides, tmp_path / "run")
    lines = terminal.getvalue().split("\r")
    assert "tasks 1/3  satisfied 1  tokens 200  run budget 200/5,000 tokens" in lines
    assert "tasks 3/3  satisfied 3  tokens 600  run budget 600/5,000 tokens\n" in lines


def test_a_scripted_usage_must_be_token_counts(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "usage": {"input_tokens": "many"}}], grader=[OK])
    record, _ = _run(tmp_path, script)
    assert record.exit_code == ExitCode.USAGE and record.error.key == "worker.script"
    assert "[0].usage must map input_tokens and output_tokens to counts" in record.error.message


def test_every_limit_and_budget_key_is_in_the_docs_key_table():
    from support import readme

    from rubric_runner.config.validate import LIMIT_EXAMPLES

    rows = [line for line in readme.all_text().splitlines() if line.startswith("| `")]
    for key in LIMIT_EXAMPLES:
        assert any(f"`{key}`" in row.split(" | ")[0] for row in rows), key
