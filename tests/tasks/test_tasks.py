"""Task sets, concurrency, repeats, the response cache, multi-task resume and regrade."""

from __future__ import annotations

import contextlib
import gc
import inspect
import json
import math
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from support.helpers import (
    SCRIPTED_EVIDENCE,
    cli_process,
    compose_config,
    md_table,
    on_terminal,
    read_events,
    run_cli,
    run_json,
    scripted_overrides,
    verdict,
    write_script,
)

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.loop.task import TaskRun
from rubric_runner.paths import DATA_DIR
from rubric_runner.records import CheckOutcome, RunRecord, TaskRecord, TaskTally
from rubric_runner.report.live import RunReports
from rubric_runner.sandbox import Limits, run_cases

OK = verdict("satisfied", ("c", True))


def _dataset(path: Path, ids: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "task": f"do {i}"}) + "\n" for i in ids))
    return path


def _run(tmp_path: Path, script: Path, *extra: str, name: str = "run"):
    overrides = scripted_overrides(script, *extra)
    run_dir = tmp_path / name
    return rubric_runner.run(overrides, run_dir), run_dir


def test_shipped_coding_dataset_has_ten_tasks_whose_suites_pass_a_reference_solution():
    import code_task_solutions

    lines = (DATA_DIR / "datasets" / "code_tasks.jsonl").read_text().splitlines()
    tasks = [json.loads(line) for line in lines]
    assert len(tasks) >= 10
    for task in tasks:
        suite = task["tools"]["run_test_suite"]
        source = "import re\n\n" + inspect.getsource(getattr(code_task_solutions, suite["function"]))
        result = run_cases(source, suite["function"], suite["cases"], Limits(wall_seconds=10))
        assert result["ok"], (task["id"], result["failures"])
        assert len(result["passed"]) == len(suite["cases"]) >= 3


def test_code_tasks_preset_composes_with_the_dataset():
    from rubric_runner.loop.plan import prepare
    from rubric_runner.records import RunHeader

    plan = prepare(compose_config(["rubric=code_tasks", "worker=scripted", "grader=scripted"]), RunHeader(),
                   Path("/nonexistent"), roles=())  # checks each task's own tool settings against its tools
    assert len(plan.tasks) == 12 and plan.tasks[0].id == "find_duplicates"


def test_multi_task_run_keeps_each_task_apart(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "answer"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", "run.concurrency=2")
    assert record.status == "satisfied" and record.exit_code == 0
    assert record.aggregate.runs == 3 and record.aggregate.satisfied_rate == 1.0
    for task_id in ("a", "b", "c"):
        task_record = run_json(run_dir / "tasks" / f"{task_id}-r0")
        assert task_record["task_id"] == task_id and task_record["status"] == "satisfied"
        transcript = json.loads((run_dir / "tasks" / f"{task_id}-r0" / "transcript.json").read_text())
        assert transcript["messages"][0]["data"]["content"] == f"do {task_id}"
    ends = [e for e in read_events(run_dir) if e["event"] == "task_end"]
    assert sorted(e["task_id"] for e in ends) == ["a", "b", "c"]
    assert run_json(run_dir)["aggregate"]["usage"]["worker"]["calls"] == 3


def _max_overlap(records: list[dict]) -> int:
    edges = []
    for r in records:
        edges += [(datetime.fromisoformat(r["started_at"]), 1), (datetime.fromisoformat(r["ended_at"]), -1)]
    level = peak = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_bounds_tasks_in_flight(tmp_path, concurrency):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.3}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", [f"t{i}" for i in range(8)])
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", f"run.concurrency={concurrency}")
    assert record.aggregate.satisfied == 8
    tasks = [json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")]
    assert _max_overlap(tasks) == concurrency


def test_repeats_run_every_task_k_times(tmp_path):
    script = write_script(
        tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK],
        tasks={"b": {"grader": [verdict("failed", explanation="no")]}},
    )
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={_dataset(tmp_path / 't.jsonl', ['a', 'b'])}", "run.repeats=3")
    assert record.aggregate.runs == 6 and record.aggregate.repeats == 3
    assert (record.aggregate.pass_at_k, record.aggregate.pass_hat_k) == (0.5, 0.5)
    assert record.aggregate.statuses == {"satisfied": 3, "failed": 3} and record.exit_code == 1
    assert sorted(p.parent.name for p in run_dir.glob("tasks/*/result.json")) == [f"{t}-r{k}" for t in "ab" for k in range(3)]


def test_pass_at_k_math():
    def r(task, repeat, status):
        return TaskRecord(status=status, task_id=task, repeat=repeat, run_dir=f"{task}-{repeat}")

    results = [r("a", 0, "satisfied"), r("a", 1, "failed"), r("b", 0, "satisfied"), r("b", 1, "satisfied"), r("c", 0, "failed"), r("c", 1, "error")]
    record, tally = RunRecord(), TaskTally(len(results))
    for index, result in enumerate(results):
        tally.add(index, result)
    tally.fill(record, repeats=2)
    # c's error is no verdict: c has one decided run, so k is 1 (every task has its k runs), and the rate
    # is over the five decided runs
    assert (record.aggregate.decided, record.aggregate.k) == (5, 1)
    assert record.aggregate.pass_at_k == record.aggregate.pass_hat_k == round((1 / 2 + 1 + 0) / 3, 4)
    assert record.aggregate.satisfied_rate == 0.6
    assert record.status == "error"  # the worst task status
    complete = [r("a", 0, "satisfied"), r("a", 1, "failed"), r("b", 0, "satisfied"), r("b", 1, "satisfied"),
                r("c", 0, "failed"), r("c", 1, "failed")]
    record, tally = RunRecord(), TaskTally(len(complete))
    for index, result in enumerate(complete):
        tally.add(index, result)
    tally.fill(record, repeats=2)
    assert record.aggregate.k == 2
    assert record.aggregate.pass_at_k == round(2 / 3, 4)  # a and b satisfied at least once in their 2
    assert record.aggregate.pass_hat_k == round(1 / 3, 4)  # only b satisfied every time
    assert record.aggregate.satisfied_rate == 0.5


def test_cache_second_run_makes_no_model_calls_and_keeps_repeats_apart(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b"])
    cache = tmp_path / "cache.sqlite"
    extra = (f"rubric.dataset={data}", "run.repeats=2", f"run.cache={cache}")
    first, _ = _run(tmp_path, script, *extra, name="first")
    assert first.aggregate.usage["worker"].calls == 4 and first.aggregate.usage["grader"].calls == 4
    assert first.aggregate.cache_hits == 0
    entries = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    # two tasks x two repeats x (worker + grader): repeats are not collapsed into one entry
    assert entries == 8
    second, _ = _run(tmp_path, script, *extra, name="second")
    assert second.status == "satisfied"
    assert second.aggregate.usage["worker"].calls == 0 and second.aggregate.usage["grader"].calls == 0
    assert second.aggregate.cache_hits == 8


def test_cache_shared_by_two_concurrent_processes(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.05}], grader=[OK])
    cache = tmp_path / "cache.sqlite"
    with contextlib.ExitStack() as running:
        procs = []
        for name in ("one", "two"):
            data = _dataset(tmp_path / f"{name}.jsonl", [f"{name}{i}" for i in range(12)])
            args = [*scripted_overrides(script, f"rubric.dataset={data}", f"run.cache={cache}", "run.concurrency=6"),
                    f"hydra.run.dir={tmp_path / name}"]
            procs.append(running.enter_context(cli_process(*args, cwd=tmp_path)))
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
    connection = sqlite3.connect(cache)
    assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # 24 distinct tasks x (worker + grader) responses, none lost
    assert connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 48


def test_resume_reruns_only_what_did_not_finish(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "x"}],
        grader=[OK],
        tasks={"shaky": {"worker": [{"raise": "provider 500"}, {"content": "x"}]}},
    )
    data = _dataset(tmp_path / "tasks.jsonl", ["good", "shaky", "fine"])
    first, run_dir = _run(tmp_path, script, f"rubric.dataset={data}")
    assert first.status == "error" and first.aggregate.statuses == {"satisfied": 2, "error": 1}
    again, _ = _run(tmp_path, script, f"rubric.dataset={data}", "run.resume=true")
    assert again.status == "satisfied"
    assert (again.aggregate.reused, again.aggregate.rerun) == (2, 1)
    assert [t.reused for t in sorted(again.tasks, key=lambda t: t.task_id)] == [True, True, False]


REVISE = verdict("needs_revision", ("c", False))
MIXED = {  # per task: satisfied at once, out of iterations, failed, a provider error
    "slow": {"worker": [{"content": "x"}, {"content": "y"}], "grader": [REVISE, REVISE]},
    "bad": {"grader": [verdict("failed", ("c", False))]},
    "down": {"worker": [{"raise": "provider 500"}]},
}


def _mixed_run(tmp_path: Path, ids: list[str], *extra: str):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK], tasks=MIXED)
    data = _dataset(tmp_path / "tasks.jsonl", ids)
    return _run(tmp_path, script, f"rubric.dataset={data}", "run.repeats=2", "run.concurrency=3", "grader.max_iterations=2", *extra)


def _counted_from_disk(run_dir: Path, ids: list[str], repeats: int) -> dict:
    """A multi-task run's numbers, counted afresh from its task records on disk, in task order."""
    records = [TaskRecord.model_validate_json((run_dir / "tasks" / f"{i}-r{k}" / "result.json").read_text())
               for i in ids for k in range(repeats)]
    usage: dict = {}
    for record in records:
        for role, counts in record.usage.items():
            for field, value in counts.model_dump().items():
                usage.setdefault(role, {}).setdefault(field, 0)
                usage[role][field] += value
    crashed_or_unfinished = {"error", "grader_error", "running", "interrupted", "not_run", "budget_exceeded"}
    satisfied = {i: [r.status == "satisfied" for r in records if r.task_id == i and r.status not in crashed_or_unfinished]
                 for i in ids}
    decided = {i: runs for i, runs in satisfied.items() if runs}
    k = min(map(len, decided.values()))
    statuses: dict = {}
    for record in records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    verification = {which: {outcome.value: sum(getattr(r.verification, which).outcome is outcome for r in records if r.verification)
                            for outcome in CheckOutcome} for which in ("first", "final")}
    return {
        "rows": [(r.task_id, r.repeat, r.status, r.iterations, r.run_dir) for r in records],
        "usage": usage, "iterations": sum(r.iterations for r in records), "statuses": statuses,
        "satisfied": sum(map(sum, satisfied.values())), "decided": sum(map(len, satisfied.values())),
        "satisfied_rate": round(sum(map(sum, satisfied.values())) / sum(map(len, satisfied.values())), 4), "k": k,
        "pass_at_k": round(sum(1 - math.comb(len(v) - sum(v), k) / math.comb(len(v), k) for v in decided.values()) / len(decided), 4),
        "pass_hat_k": round(sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in decided.values()) / len(decided), 4),
        "verification": verification,
    }


def _counted_in_record(record: RunRecord) -> dict:
    aggregate = record.aggregate
    return {
        "rows": [(t.task_id, t.repeat, t.status, t.iterations, t.run_dir) for t in record.tasks],
        "usage": {role: counts.model_dump() for role, counts in aggregate.usage.items()},
        "iterations": record.grading_passes(), "statuses": aggregate.statuses,
        "satisfied": aggregate.satisfied, "decided": aggregate.decided, "satisfied_rate": aggregate.satisfied_rate,
        "k": aggregate.k, "pass_at_k": aggregate.pass_at_k, "pass_hat_k": aggregate.pass_hat_k,
        "verification": aggregate.verification,
    }


def test_a_multi_task_runs_record_adds_up_its_task_records_on_disk(tmp_path):
    ids = ["good", "slow", "bad", "down", "fine"]
    record, run_dir = _mixed_run(tmp_path, ids)
    assert record.aggregate.statuses == {"satisfied": 4, "max_iterations_reached": 2, "failed": 2, "error": 2}
    assert record.status == "error" and (record.aggregate.runs, record.aggregate.tasks) == (10, 5)
    assert record.aggregate.verification["final"]["failed"] == 8  # the haiku rubric's hidden check, on each answer
    assert _counted_in_record(record) == _counted_from_disk(run_dir, ids, 2)
    assert json.loads((run_dir / "result.json").read_text()) == json.loads(record.model_dump_json())


def test_resume_starts_only_the_tasks_that_did_not_finish(tmp_path, monkeypatch):
    ids = ["good", "slow", "bad", "fine"]  # each ends final; an error is run again (see above)
    first, run_dir = _mixed_run(tmp_path, ids)
    started: list[str] = []
    run_task = TaskRun.__call__

    async def counted(self):
        started.append(self.key)
        return await run_task(self)

    monkeypatch.setattr(TaskRun, "__call__", counted)
    finished, _ = _mixed_run(tmp_path, ids, "run.resume=true")
    assert started == [] and (finished.aggregate.reused, finished.aggregate.rerun) == (8, 0)
    assert all(t.reused for t in finished.tasks)
    assert _counted_in_record(finished) == _counted_in_record(first)

    for gone in ("slow-r1", "fine-r0"):
        shutil.rmtree(run_dir / "tasks" / gone)
    half, _ = _mixed_run(tmp_path, ids, "run.resume=true")
    assert sorted(started) == ["fine-r0", "slow-r1"]
    assert (half.aggregate.reused, half.aggregate.rerun) == (6, 2)
    assert [t.task_id + f"-r{t.repeat}" for t in half.tasks if not t.reused] == ["slow-r1", "fine-r0"]
    assert _counted_in_record(half) == _counted_from_disk(run_dir, ids, 2)


@pytest.mark.slow  # a scan of the whole heap at each of its 16 tasks
def test_a_multi_task_run_lets_go_of_each_task_record_once_counted(tmp_path, monkeypatch):
    alive: list[int] = []
    task_ended = RunReports.task_ended

    def records_alive() -> int:
        gc.collect()
        return sum(isinstance(o, (RunRecord, TaskRecord)) for o in gc.get_objects())

    def counting(self):
        alive.append(records_alive() - before)  # other tests' module-level records are not this run's
        task_ended(self)

    monkeypatch.setattr(RunReports, "task_ended", counting)
    monkeypatch.setattr("rubric_runner.report.live.REFRESH_SECONDS", 3600.0)  # a refresh reads every record
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", [f"t{i}" for i in range(16)])
    before = records_alive()
    record, _ = _run(tmp_path, script, f"rubric.dataset={data}", "run.concurrency=2")
    assert record.aggregate.satisfied == 16 and len(alive) == 16
    assert max(alive) <= 6, alive  # the run's own, the template and those in flight: not one per task done


def test_regrade_with_another_grader_keeps_the_old_record(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "three lines"}], grader=[OK])
    strict = write_script(tmp_path / "strict.yaml", worker=[], grader=[verdict("needs_revision", ("c", False))])
    run_dir = tmp_path / "run"
    assert rubric_runner.run(scripted_overrides(script), run_dir).exit_code == 0
    before = (run_dir / "tasks" / "task-r0" / "result.json").read_text()
    assert run_command(["regrade", str(run_dir), f"grader.script={strict}"]) == 1
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    record = run_json(regrade_dir)
    assert record["status"] == "max_iterations_reached" and record["header"]["regraded_from"] == str(run_dir)
    assert record["task"]["evaluations"][0]["criteria"] == [{"name": "c", "passed": False, "gap": "fix c"}]
    assert record["task"]["final_answer"] == "three lines" and record["task"]["usage"]["worker"]["calls"] == 0
    assert record["task"]["verification"] == json.loads(before)["verification"]  # the original answer's, not re-run
    assert record["task"]["verification"]["final"]["checks"][0]["details"]["problems"] == ["1 lines, expected 3", "line 1: 2 syllables, expected 5"]
    assert (run_dir / "tasks" / "task-r0" / "result.json").read_text() == before


def test_a_regrade_says_why_each_task_ended_in_grader_error(tmp_path, capsys):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["t0", "t1"])
    _, run_dir = _run(tmp_path, script, f"rubric.dataset={data}")
    chatty = write_script(tmp_path / "chatty.yaml", worker=[], grader=[{"content": "Looks fine to me."}])
    capsys.readouterr()
    assert run_command(["regrade", str(run_dir), f"grader.script={chatty}"]) == 3
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run/tasks/")]
    assert len(lines) == 2 and all("answered in text instead of a verdict: 'Looks fine to me.'" in line for line in lines), lines


def test_rate_limit_spaces_calls_to_a_provider(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", [f"t{i}" for i in range(4)])
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", "run.concurrency=4", "+run.rate_limits.scripted=10")
    assert record.aggregate.satisfied == 4
    stamps = sorted(
        datetime.fromisoformat(e["timestamp"]) for e in read_events(run_dir) if e["event"] == "token_usage"
    )
    assert len(stamps) == 8
    # 8 calls at 10 requests per second: the limiter must spread them over at least 0.6 s
    assert (stamps[-1] - stamps[0]).total_seconds() >= 0.6


def test_provider_429s_slow_a_multi_task_run_down_instead_of_failing_it(tmp_path, monkeypatch):
    from support.wire import FAKE_KEYS, FakeServer, fault, model_overrides, text
    from support.wire import verdict as wire_verdict

    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    data = _dataset(tmp_path / "tasks.jsonl", [f"t{i}" for i in range(4)])
    throttled = [fault(429, "rate limited", retry_after="0.3")] * 3
    with FakeServer("openai", [*throttled, *[text("answer")] * 4]) as worker, FakeServer(
        "openai", [wire_verdict("satisfied", ("c", True))] * 4
    ) as grader:
        overrides = [
            *model_overrides("worker", worker, max_retries=5, timeout=5),
            *model_overrides("grader", grader, max_retries=5, timeout=5),
            f"rubric.dataset={data}", "run.concurrency=4", "+run.rate_limits.openai=50", "run.console=false", SCRIPTED_EVIDENCE,
        ]
        started = datetime.now()
        record = rubric_runner.run(overrides, tmp_path / "run")
        elapsed = (datetime.now() - started).total_seconds()
    assert record.status == "satisfied", record.tasks
    assert record.aggregate.satisfied == 4
    assert len(worker.requests) == 7 and worker.remaining == 0  # three 429s, each retried after its retry-after
    assert elapsed >= 0.3


def test_second_sweep_hits_the_cache_and_a_resumed_sweep_reuses_its_jobs(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b"])
    common = ["-m", *scripted_overrides(script, f"rubric.dataset={data}", f"run.cache={tmp_path / 'cache.sqlite'}"),
              "run.repeats=1,2"]

    def summary(sweep_dir: Path) -> list[dict]:
        return [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]

    first = run_cli(*common, f"hydra.sweep.dir={tmp_path / 'first'}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # job 1's repeat 0 asks exactly what job 0 asked: those 2 runs x 2 calls come from the cache
    assert [(r["cache_hits"], r["reused"]) for r in summary(tmp_path / "first")] == [(0, 0), (4, 0)]

    second = run_cli(*common, f"hydra.sweep.dir={tmp_path / 'second'}", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    rows = summary(tmp_path / "second")
    # job 0: 2 tasks, job 1: 2 tasks x 2 repeats; each run a worker and a grader call, all from the cache
    assert [r["cache_hits"] for r in rows] == [4, 8] and [r["worker_tokens"] for r in rows] == [0, 0]
    assert "cache hits 12, reused 0" in second.stdout

    resumed = run_cli(*common, "run.resume=true", f"hydra.sweep.dir={tmp_path / 'first'}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert [r["reused"] for r in summary(tmp_path / "first")] == [2, 4]
    assert "reused 6" in resumed.stdout


def test_progress_line_on_a_terminal_and_quiet_in_a_pipe(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    overrides = [o for o in scripted_overrides(script, f"rubric.dataset={data}") if o != "run.console=false"]
    code, shown = on_terminal([*overrides, f"hydra.run.dir={tmp_path / 'tty'}"], cwd=tmp_path)
    assert code == 0
    assert b"tasks 3/3  satisfied 3  tokens " in shown
    piped = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'pipe'}", cwd=tmp_path)
    assert piped.returncode == 0 and "tasks 3/3" not in piped.stderr
    assert "tasks 3 x repeats 1: 3/3 satisfied" in piped.stdout


def test_a_provider_outage_has_no_satisfied_rate_and_its_crashes_are_counted_beside(tmp_path):
    """Issue 44, cases 5 and 6: every task of a set met a provider outage, and the console read ``0/3
    satisfied (satisfied@1 0.00, satisfied^1 0.00)``, the record's aggregate ``satisfied_rate 0.0``, the
    report ``satisfied rate 0.0%``: a crash says nothing of the task, so no run was decided, and the
    figures are undefined (null, n/a), the crashes counted beside them."""
    script = write_script(tmp_path / "s.yaml", worker=[{"raise": "provider is down"}], grader=[OK])
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    overrides = [o for o in scripted_overrides(script, f"rubric.dataset={data}") if o != "run.console=false"]
    done = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "tasks 3 x repeats 1: satisfied n/a: no run decided, 3 crashed (error 3); reused 0" in done.stdout
    aggregate = run_json(tmp_path / "run")["aggregate"]
    assert {key: aggregate[key] for key in ("runs", "finished", "decided", "satisfied_rate", "k", "pass_at_k", "pass_hat_k")} == {
        "runs": 3, "finished": 3, "decided": 0, "satisfied_rate": None, "k": None, "pass_at_k": None, "pass_hat_k": None}
    assert "3 runs in 1 job: 3 error; satisfied rate n/a of the 0 decided, 3 crashed." in (tmp_path / "run" / "report.md").read_text()
    [row] = [json.loads(line) for line in (tmp_path / "run" / "summary.jsonl").read_text().splitlines()]
    assert (row["finished"], row["crashed"], row["satisfied_rate"], row["satisfied_at_k"]) == (3, 3, None, None)


def test_grader_errors_among_repeats_are_outside_satisfied_k(tmp_path):
    """Issue 44, case 5: task a satisfied twice and task b's two gradings crashed (grader_error) read
    ``2/4 satisfied (satisfied@2 0.50, satisfied^2 0.50)``, b's crashes counted as unsatisfied; b has no
    decided run, so the figures are a's, and the grader errors are counted beside them."""
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK],
                          tasks={"b": {"grader": [{"raise": "grader is down"}]}})
    data = _dataset(tmp_path / "tasks.jsonl", ["a", "b"])
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", "run.repeats=2")
    aggregate = record.aggregate
    assert aggregate.statuses == {"satisfied": 2, "grader_error": 2}
    assert (aggregate.decided, aggregate.satisfied_rate, aggregate.k, aggregate.pass_hat_k) == (2, 1.0, 2, 1.0)
    text = (run_dir / "report.md").read_text()
    assert "4 runs in 1 job: 2 satisfied, 2 grader_error; satisfied rate 100.0% of the 2 decided, 2 crashed." in text
    [group] = md_table(text, "## By configuration")
    assert (group["outside the rates"], group["satisfied"], group["satisfied^k"], group["k"]) == (
        "grader_error 2", "2/2 (100.0%)", "100.0%", "2")


def test_regrades_started_in_one_second_get_dirs_of_their_own(tmp_path, monkeypatch):
    from rubric_runner.records import layout

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 12, 1, 10, 0, 0, tzinfo=tz)

    monkeypatch.setattr(layout, "datetime", Frozen)
    made = [layout.new_regrade_dir(tmp_path) for _ in range(3)]
    assert [path.name for path in made] == ["20261201T100000", "20261201T100000-2", "20261201T100000-3"]
    assert all(path.is_dir() and path.parent == tmp_path / "regrades" for path in made)


def test_regrade_applies_the_grader_settings_of_a_run(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "an answer"}], grader=[OK])
    contradicting = verdict("satisfied", ("c", True))
    contradicting["tool_calls"][0]["args"]["criteria"][0] = {"name": "c", "passed": False, "gap": "g"}
    stubborn = write_script(tmp_path / "stubborn.yaml", worker=[], grader=[contradicting] * 5)
    run_dir = tmp_path / "run"
    assert rubric_runner.run(scripted_overrides(script), run_dir).exit_code == 0
    proc = run_cli("regrade", str(run_dir), f"grader.script={stubborn}", "grader.max_model_calls=2", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    record = run_json(regrade_dir)
    assert record["status"] == "grader_error" and "run limit (2/2)" in record["error"]["message"]
