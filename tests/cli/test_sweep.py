"""Multiruns as real subprocesses (basic and joblib launchers): per-job records, the summary files,
crashed jobs as rows, and the sweep's exit code."""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from support.helpers import ROOT, cli_process, compose_config, run_cli, run_json, verdict, write_script
from support.sweeps import (
    SCRIPTED,
    STATUSES,
    A,
    check_workspace_sweep,
    read_rows,
    user_task_set,
    workspace_sweep,
    write_scripts,
)

from rubric_runner.config.validate import validate
from rubric_runner.errors import UsageError
from rubric_runner.records import Status, collect, sweep_exit_code
from rubric_runner.report import write_summary


@pytest.fixture
def basic_sweep(six_job_sweep):
    proc, sweep_dir, _ = six_job_sweep
    return proc, sweep_dir


def test_basic_sweep_writes_a_row_per_job_and_exits_3(basic_sweep):
    proc, sweep_dir = basic_sweep
    assert proc.returncode == 3, proc.stderr
    rows = read_rows(sweep_dir)
    assert [r["job"] for r in rows] == ["0", "1", "2", "3", "4", "5"]
    assert [r["status"] for r in rows] == STATUSES
    assert [r["worker"] for r in rows] == ["scripted:alpha", "scripted:beta"] * 3
    assert {r["grader"] for r in rows} == {"scripted:demo"} and {r["rubric"] for r in rows} == {"haiku"}
    # a job's iterations are a mean over its runs; the crashed job has no run to take one of
    assert [r["mean_passes_per_run"] for r in rows] == [1.0, 1.0, 2.0, None, 2.0, 2.0]
    assert [r["runs"] for r in rows] == [1, 1, 1, 0, 1, 1]
    crashed = rows[3]
    assert crashed["error"].startswith("IsADirectoryError:") and "events.jsonl" in crashed["error"]
    assert "worker.model=scripted\\:beta" in crashed["overrides"]
    for row in rows:
        job_dir = sweep_dir / row["job"]
        assert row["run_dir"] == str(job_dir)
        record = run_json(job_dir)
        assert record["status"] == row["status"]
        usage = record["task"]["usage"] if record["task"] else {role: {"total_tokens": 0} for role in ("worker", "grader")}
        assert row["worker_tokens"] == usage["worker"]["total_tokens"]  # the crashed job never got to its task
        assert row["grader_tokens"] == usage["grader"]["total_tokens"]
        assert row["wall_seconds"] == record["wall_seconds"]
        if row["job"] != "3":
            assert row["worker_tokens"] > 0 and row["grader_tokens"] > 0
            for name in ("events.jsonl", "tasks/task-r0/transcript.json", ".hydra/overrides.yaml"):
                assert (job_dir / name).is_file(), name
    assert ("sweep: partial: 5 of 5 runs finished, 1 job not started; 5 runs in 6 jobs: 3 satisfied, 2 max_iterations_reached; "
            "satisfied rate 60.0%, pooled over 5 configurations (") in proc.stdout
    # each configuration's own rate, the first four of them named, then the exit code
    assert re.search(r"pooled over 5 configurations \((?:[^;]+: (?:100|0)\.0%; ){4}1 more in the table\) -> exit 3", proc.stdout)


def test_summary_csv_matches_jsonl(basic_sweep):
    _, sweep_dir = basic_sweep
    with open(sweep_dir / "summary.csv", newline="") as f:
        table = list(csv.DictReader(f))
    rows = read_rows(sweep_dir)
    assert len(table) == len(rows) == 6
    for line, row in zip(table, rows):
        assert line["overrides"] == " ".join(row["overrides"])
        for key in ("job", "worker", "grader", "rubric", "status", "runs", "worker_tokens", "grader_tokens", "error"):
            assert line[key] == str(row[key]), key
        assert line["mean_passes_per_run"] == ("" if row["mean_passes_per_run"] is None else str(row["mean_passes_per_run"]))


def test_job_without_any_record_is_still_a_row(basic_sweep, tmp_path):
    """A job whose process died before run() wrote anything: only the dir Hydra made remains."""
    _, sweep_dir = basic_sweep
    copy = tmp_path / "sweep"
    shutil.copytree(sweep_dir, copy)
    (copy / "4" / "result.json").unlink()
    records = collect(copy)
    write_summary(copy, records)
    row = read_rows(copy)[4]
    assert (row["status"], row["exit_code"], row["worker"], row["rubric"]) == ("error", 3, "scripted:alpha", "haiku")
    assert row["error"] == "NoRecord: the job ended before writing result.json"
    assert sweep_exit_code([job.record.status for job in records]) == 3


def test_joblib_sweep_runs_jobs_in_parallel_and_gates_on_fail_under(tmp_path):
    """Two loky workers; the grader's script comes from the package_data resolver in each worker."""
    slow = write_script(tmp_path / "slow.yaml", [{"content": "a haiku", "latency": 1.5}, {"content": "a better haiku"}], [])
    down = write_script(tmp_path / "down.yaml", [{"raise": "provider is down"}], [])
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(
        "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *SCRIPTED, "rubric=haiku",
        f"worker.script={slow},{down}", "worker.model=scripted:alpha,scripted:beta",
        "sweep.fail_under=0.6", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path,
    )
    assert proc.returncode == 4, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("sweep: ")]
    # a provider outage is a crash, no verdict on the task: outside the rate, counted beside it; the gate
    # counts it as a run not satisfied
    assert line.startswith("sweep: 4 runs: 2 satisfied, 2 error; satisfied rate 100.0% of the 2 decided, 2 crashed, "
                           "pooled over 4 configurations (")
    assert line.endswith(") (fail_under 60.0%; over every run and job not started: 50.0%) -> exit 4")
    # each configuration's own rate: the slow script's two satisfied, the down one's none decided
    assert (line.count("/slow.yaml: 100.0%"), line.count("/down.yaml: n/a")) == (2, 2)
    rows = read_rows(sweep_dir)
    assert [(r["worker"], r["status"]) for r in rows] == [
        ("scripted:alpha", "satisfied"), ("scripted:beta", "satisfied"),
        ("scripted:alpha", "error"), ("scripted:beta", "error"),
    ]
    assert rows[2]["error"] == "ScriptedFault: provider is down"
    records = [run_json(sweep_dir / r["job"]) for r in rows]
    assert records[0]["task"]["evaluations"][-1]["explanation"] == "count_syllables reports three lines of 5-7-5, and the theme is spring."
    start = [datetime.fromisoformat(r["started_at"]) for r in records]
    end = [datetime.fromisoformat(r["ended_at"]) for r in records]
    assert start[1] < end[0] and start[0] < end[1], "jobs 0 and 1 did not overlap"
    assert (sweep_dir / "report.md").is_file() and (sweep_dir / "report.html").is_file()


def test_a_workspace_task_set_sweeps_on_joblib(workspace_run, tmp_path):
    """Each job's tasks end as in a local run, with the same kept diffs, hidden checks and seeds: from the
    package's task set and from a user's copy named relative to the shell's dir."""
    user_task_set(tmp_path)
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(*workspace_sweep("hydra/launcher=joblib", "hydra.launcher.n_jobs=2"), f"hydra.sweep.dir={sweep_dir}",
                   cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr
    check_workspace_sweep(sweep_dir, workspace_run)


def loky_workers(parent_pid):
    """The pids of the joblib (loky) worker processes of ``parent_pid``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent_pid and b"LokyProcess" in cmdline:
            pids.append(int(stat.parent.name))
    return pids


def status_of(run_dir):
    try:
        return run_json(run_dir)["status"]
    except (OSError, ValueError, KeyError):
        return None


def worker_call_began(run_dir):
    """Whether the run's task has begun: its worker's first model call is logged (a job killed before that
    is a job that did not start, in the reports)."""
    try:
        return '"model_call_start"' in (run_dir / "events.jsonl").read_text()
    except OSError:
        return False


def wait_for(proc, condition, what):
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline and proc.poll() is None, f"never saw: {what}"
        time.sleep(0.05)


def test_joblib_worker_killed_mid_run_is_a_row(tmp_path):
    """A job's worker process is killed (as the OOM killer would) while the job runs."""
    good, _, _ = write_scripts(tmp_path / "scripts")
    hang = write_script(tmp_path / "hang.yaml", [{"content": "never", "latency": 120}], [])
    sweep_dir = tmp_path / "sweep"
    with cli_process("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *SCRIPTED, f"worker.script={good},{hang}",
                     "grader.script=${worker.script}", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path) as proc:
        wait_for(proc, lambda: (status_of(sweep_dir / "0"), status_of(sweep_dir / "1")) == ("satisfied", "running"),
                 "job 0 done while job 1 runs")
        wait_for(proc, lambda: worker_call_began(sweep_dir / "1"), "job 1's task awaiting its worker's reply")
        workers = loky_workers(proc.pid)
        assert len(workers) == 2
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    assert "TerminatedWorkerError" in stderr
    assert "sweep: 2 runs: 1 satisfied, 1 error" in stdout
    rows = read_rows(sweep_dir)
    assert [r["status"] for r in rows] == ["satisfied", "error"]
    assert rows[1]["error"].startswith("Unfinished: result.json still says running")
    assert rows[1]["worker"] == "scripted:demo" and "worker.script=" + str(hang) in rows[1]["overrides"]
    assert (sweep_dir / "report.md").is_file()


def test_ctrl_c_stops_the_sweep_and_keeps_its_summary_marked_partial(tmp_path):
    """Finding 2: an interrupted sweep read ``1 run: 1 interrupted; satisfied rate 0.0%``, leaving out the job
    that never started, and counting the unfinished run as a failure."""
    good, _, _ = write_scripts(tmp_path / "scripts")
    slow = write_script(tmp_path / "slow.yaml", [{"content": "slow", "latency": 2}], [])
    sweep_dir = tmp_path / "sweep"
    with cli_process("-m", *SCRIPTED, f"worker.script={slow},{good}", "grader.script=${worker.script}",
                     f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path) as proc:
        wait_for(proc, lambda: status_of(sweep_dir / "0") == "running", "job 0 running")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    partial = "partial: 0 of 1 runs finished, 1 job not started"
    assert f"sweep: {partial}; 1 run: 1 interrupted; satisfied rate n/a of the 0 decided, 1 unfinished -> exit 130" in stdout
    assert [(r["status"], r["finished"], r["unfinished"], r["partial"]) for r in read_rows(sweep_dir)] == [
        ("interrupted", 0, 1, partial)]
    assert not (sweep_dir / "1").exists()
    for name in ("report.md", "report.html"):
        assert "Partial: 0 of 1 runs finished, 1 job not started." in (sweep_dir / name).read_text(), name
    again = run_cli("report", str(sweep_dir), cwd=tmp_path)  # later, from the records and the sweep's multirun.yaml
    assert f"report: {partial}; 1 run: 1 interrupted" in again.stdout


def _digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_two_sweeps_started_at_once_into_one_dir_are_refused_but_one(tmp_path):
    good, _, _ = write_scripts(tmp_path / "scripts")
    slow = write_script(tmp_path / "slow.yaml", [{"content": "final", "latency": 2}], [verdict("satisfied", (A, True))])
    sweep_dir = tmp_path / "sweep"
    args = ("-m", *SCRIPTED, f"worker.script={slow},{good}", "grader.script=${worker.script}", f"hydra.sweep.dir={sweep_dir}")
    with cli_process(*args, cwd=tmp_path) as first, cli_process(*args, cwd=tmp_path) as second:
        ended = [(proc.pid, proc.wait(timeout=120), *proc.communicate()) for proc in (first, second)]
    codes = sorted(code for _, code, _, _ in ended)
    assert codes == [0, 2], ended
    refused = next(stderr for _, code, _, stderr in ended if code == 2)
    assert len(refused.splitlines()) == 1 and refused.startswith(f"error: hydra.sweep.dir: {sweep_dir} "), refused
    assert len(read_rows(sweep_dir)) == 2
    with cli_process(*args, "run.resume=true", cwd=tmp_path) as third:  # a resume, while a sweep works there
        wait_for(third, lambda: status_of(sweep_dir / "0") == "running", "job 0 running again")
        third.send_signal(signal.SIGSTOP)  # it holds the dir however long the fourth takes to start
        try:
            fourth = run_cli(*args, "run.resume=true", cwd=tmp_path)
        finally:
            third.send_signal(signal.SIGCONT)
        third.communicate(timeout=120)
    assert fourth.returncode == 2 and third.returncode == 0, fourth.stderr
    assert re.fullmatch(rf"error: hydra.sweep.dir: {re.escape(str(sweep_dir))} is in use by pid {third.pid} on \S+ "
                        r"\(rubric-runner -m .*\) \(wait for it to end, or stop it; one process at a time works in a run "
                        r"or sweep dir\)\n", fourth.stderr), fourth.stderr


def test_a_run_into_a_sweep_dir_is_refused_and_leaves_the_sweep_as_it_was(tmp_path):
    good, _, _ = write_scripts(tmp_path / "scripts")
    sweep_dir = tmp_path / "sweep"
    done = run_cli("-m", *SCRIPTED, f"worker.script={good}", "grader.script=${worker.script}", "grader.max_iterations=1,2",
                   f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = _digests(sweep_dir)
    for extra in ((), ("run.resume=true",)):
        proc = run_cli(*SCRIPTED, f"worker.script={good}", f"grader.script={good}", f"hydra.run.dir={sweep_dir}", *extra,
                       cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.splitlines() == [
            f"error: hydra.run.dir: {sweep_dir} is a sweep's dir, which holds its jobs' runs and its summaries "
            "(leave hydra.run.dir unset for a new dir, or give one of its jobs' dirs)"]
        assert _digests(sweep_dir) == before


def test_ctrl_c_of_a_joblib_sweep_records_its_running_jobs_interrupted_and_the_summary_partial(tmp_path):
    """Ctrl-C reaches the sweep's process and its loky workers (one process group): each running job stops at its
    checkpoint, recorded ``interrupted``, and the sweep ends as the basic launcher's does."""
    slow = write_script(tmp_path / "slow.yaml", [{"content": "slow", "latency": 3}], [])
    sweep_dir = tmp_path / "sweep"
    with cli_process("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *SCRIPTED, f"worker.script={slow}",
                     "grader.script=${worker.script}", "tags=[a],[b],[c]", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path,
                     group=True) as proc:
        wait_for(proc, lambda: all(worker_call_began(sweep_dir / job) for job in ("0", "1")), "jobs 0 and 1 running")
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "SIGINT: stopping the sweep's jobs at their next checkpoint" in stdout
    # the two running jobs stopped at their checkpoint; the third began after the stop, and stopped at once
    assert [status_of(sweep_dir / job) for job in ("0", "1", "2")] == ["interrupted"] * 3
    partial = "partial: 0 of 3 runs finished"
    assert f"sweep: {partial}; 3 runs: 3 interrupted; satisfied rate n/a of the 0 decided, 3 unfinished -> exit 130" in stdout
    assert [(r["status"], r["partial"]) for r in read_rows(sweep_dir)] == [("interrupted", partial)] * 3
    assert "Traceback" not in stderr, stderr
    assert not (sweep_dir / ".stop").exists()


def test_sweep_rejected_by_hydra_exits_2_without_summary(tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", *SCRIPTED, "grader=nope,haiku", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "grader/nope" in proc.stderr
    assert not (sweep_dir / "summary.jsonl").exists()


def test_bad_price_table_stops_the_sweep_before_any_job(tmp_path):
    sweep_dir = tmp_path / "sweep"
    missing = tmp_path / "nope.yaml"
    proc = run_cli("-m", *SCRIPTED, "rubric=haiku,code", f"sweep.prices={missing}", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"error: sweep.prices: price table {missing} cannot be read" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not any(p.is_dir() for p in sweep_dir.glob("*"))


def test_overlapping_task_slices_of_one_configuration_stop_the_sweep_before_any_job(tmp_path):
    """Issue 44, case 8: ``rubric.tasks=[0:3],[2:5]`` ran HumanEval-2 twice in one configuration, and the
    reports counted the two runs as repeats (``0/2`` in the matrix). Slices that do not overlap within a
    configuration run, whatever other configurations pick."""
    demo = ("-m", "worker=scripted", "grader=scripted", "rubric=humaneval", "run.console=false")
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(*demo, "rubric.tasks=[0:3],[2:5]", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 2
    assert [line for line in proc.stderr.splitlines() if line.startswith("error: ")] == [
        "error: rubric.tasks: rubric.tasks=[0:3] and rubric.tasks=[2:5] both pick task HumanEval-2 of one configuration: it "
        "would run twice, and the reports would count the two runs as repeats (give the jobs slices that do not overlap, "
        "e.g. 'rubric.tasks=[0:50]','rubric.tasks=[50:100]'; for repeats, run.repeats=N)"]
    assert "Traceback" not in proc.stderr and not sweep_dir.exists()
    proc = run_cli(*demo, "rubric.tasks=[0:1],[1:2]", "grader.max_iterations=1,2", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # HumanEval-1 fails its one pass
    assert len(read_rows(sweep_dir)) == 4


def test_exit_codes():
    def records(*statuses):
        return [Status(s) for s in statuses]

    assert sweep_exit_code(records("satisfied", "satisfied")) == 0
    assert sweep_exit_code(records("satisfied", "failed")) == 1
    assert sweep_exit_code(records("max_iterations_reached", "grader_error")) == 3
    assert sweep_exit_code(records("satisfied", "error", "failed", "satisfied"), fail_under=0.5) == 0
    assert sweep_exit_code(records("satisfied", "error", "failed", "satisfied"), fail_under=0.51) == 4


def test_fail_under_must_be_a_fraction():
    with pytest.raises(UsageError, match="sweep.fail_under"):
        validate(compose_config(["worker=scripted", "grader=scripted", "sweep.fail_under=1.5"]))


def test_cli_and_sweep_callback_import_no_heavy_library():
    code = (
        "import sys, rubric_runner.cli, rubric_runner.cli.hydra_app, rubric_runner.cli.sweep, rubric_runner.report.render\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain', 'langchain_core', 'deepagents', 'langgraph'}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr
