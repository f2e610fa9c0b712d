"""Reports while runs go on: a sweep's, refreshed as each job ends; a multi-task run's own, refreshed
as its tasks end; and refreshes from several processes at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from support.helpers import ROOT, SCRIPTED_EVIDENCE, cli_process, verdict, write_script
from support.many_runs import write_task_job, write_task_sweep

from rubric_runner.report import live

OK = verdict("satisfied", ("c", True))


def _wait_for(proc, condition, what, seconds=120):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline and proc.poll() is None, f"never saw: {what}"
        time.sleep(0.1)


def _text(path):
    try:
        return path.read_text()
    except OSError:
        return ""


def test_sweep_report_is_refreshed_as_each_job_ends(tmp_path):
    quick = write_script(tmp_path / "quick.yaml", [{"content": "a haiku"}], [OK])
    slow = write_script(tmp_path / "slow.yaml", [{"content": "a haiku", "latency": 10}], [OK])
    sweep_dir = tmp_path / "sweep"
    with cli_process("-m", "worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE, f"worker.script={quick},{slow}",
                     "grader.script=${worker.script}", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path) as proc:
        _wait_for(proc, lambda: "In progress" in _text(sweep_dir / "report.html"), "an in-progress report")
        html, md = _text(sweep_dir / "report.html"), _text(sweep_dir / "report.md")
        assert "In progress: 1 of 2 jobs done, 1 run done." in html and "**In progress: 1 of 2 jobs done, 1 run done.**" in md
        assert [json.loads(line)["status"] for line in _text(sweep_dir / "summary.jsonl").splitlines()] == ["satisfied"]
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "In progress" not in _text(sweep_dir / "report.html") and "2 runs: 2 satisfied" in _text(sweep_dir / "report.md")


def test_multi_task_run_refreshes_its_own_report_while_it_runs(tmp_path):
    script = write_script(tmp_path / "s.yaml", [{"content": "answer", "latency": 1.5}], [OK])
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{i}", "task": f"do {i}"}) + "\n" for i in range(8)))
    run_dir = tmp_path / "run"
    with cli_process("worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE, f"worker.script={script}",
                     f"grader.script={script}", f"rubric.dataset={data}", "run.concurrency=1",
                     f"hydra.run.dir={run_dir}", cwd=tmp_path) as proc:
        _wait_for(proc, lambda: "In progress" in _text(run_dir / "report.md"), "an in-progress report of the run")
        md = _text(run_dir / "report.md")
        done = int(md.split("**In progress: ")[1].split(" of 8 runs done.**")[0])
        assert 1 <= done < 8
        rows = [json.loads(line) for line in _text(run_dir / "summary_tasks.jsonl").splitlines()]
        assert [r["status"] for r in rows].count("satisfied") == done and {r["status"] for r in rows} <= {"satisfied", "running"}
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    md = _text(run_dir / "report.md")
    assert "In progress" not in md and "8 runs in 1 job: 8 satisfied" in md


def test_a_run_refreshes_its_own_report_in_a_child_process(tmp_path, monkeypatch):
    write_task_sweep(tmp_path, jobs=1, tasks=20)
    run_dir = tmp_path / "0"

    def not_here(*args, **kwargs):
        raise AssertionError("the run's own process read its records for a refresh")

    monkeypatch.setattr(live, "collect", not_here)  # what a refresh reads stays out of the run's memory
    reports = live.RunReports(run_dir, 30, None)
    reports._refresh()
    assert "**In progress: 20 of 30 runs done.**" in _text(run_dir / "report.md")
    assert reports.last["seconds"] > 0


REFRESH = """
import sys
from pathlib import Path
from rubric_runner.report import live
live.REFRESH_SECONDS = live.REFRESH_SPACING = 0
for _ in range(int(sys.argv[2])):
    live.refresh_sweep(Path(sys.argv[1]), None, None, 2)
"""


def test_refreshes_from_several_processes_at_once_leave_whole_files(tmp_path):
    sweep_dir = tmp_path / "sweep"
    write_task_sweep(sweep_dir, jobs=2, tasks=200)
    procs = [subprocess.Popen([sys.executable, "-c", REFRESH, str(sweep_dir), "6"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    seen = 0
    while any(p.poll() is None for p in procs):
        html, jsonl = _text(sweep_dir / "report.html"), _text(sweep_dir / "summary_tasks.jsonl")
        if seen or html:  # once written, a reader always finds the whole file
            assert html.rstrip().endswith("</html>")
            assert len([json.loads(line) for line in jsonl.splitlines()]) == 400
            seen += 1
    assert [p.wait() for p in procs] == [0, 0, 0], [p.stderr.read() for p in procs]
    assert seen, "no report was read while the refreshes ran"
    assert not list(sweep_dir.glob(".*.tmp")), "a temp file was left behind"
    assert "In progress: 2 of 2 jobs done, 400 runs done." in _text(sweep_dir / "report.html")


def test_an_in_progress_job_row_adds_up_its_runs(tmp_path):
    """Finding 3: an in-progress row read ``worker_tokens 0, grader_tokens 0, iterations 0`` beside ``runs 4,
    satisfied 3``: it took the job's record, which has no totals until the job ends."""
    from rubric_runner.records import Status, collect
    from rubric_runner.report import Live, write_all

    write_task_job(tmp_path, [Status.SATISFIED, Status.SATISFIED, Status.SATISFIED, Status.FAILED], status=Status.RUNNING,
                   iterations=[1, 2, 1, 2])
    write_all(tmp_path, collect(tmp_path), live=Live(jobs=1, runs=6))
    [row] = [json.loads(line) for line in _text(tmp_path / "summary.jsonl").splitlines()]
    assert (row["status"], row["runs"], row["satisfied"]) == ("running", 4, 3)
    assert (row["worker_tokens"], row["grader_tokens"], row["mean_passes_per_run"]) == (4 * 1020, 6 * 1580, 1.5)
    assert row["partial"] == "partial: 4 of 6 runs finished"
    assert "**In progress: 4 of 6 runs done.**" in _text(tmp_path / "report.md")
