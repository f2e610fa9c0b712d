"""Reports from a real sweep: report.md numbers against the records, the report command and its
gating, configurations as groups, partial sets, a job that did not start, what the header's times
mean, and report.html in a real headless browser (its tables usable 1,400 px wide)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from datetime import datetime

import pytest
from support.browser import Elements, browse, layout
from support.helpers import (
    SCRIPTED_EVIDENCE,
    cli_process,
    md_table,
    run_cli,
    run_json,
    verdict,
    write_script,
)
from support.sweeps import PRICES, A, B

import rubric_runner
from rubric_runner.analysis.numbers import fmt_num
from rubric_runner.cli import run_command

JOBS = {0: ("alpha", "good"), 1: ("beta", "good"), 2: ("alpha", "revise"), 4: ("alpha", "stuck"), 5: ("beta", "stuck")}
"""The six-job sweep's jobs that ran, by worker and script; job 3 (beta, revise) crashed before its task."""


def report_main(argv):
    """``rubric-runner report ARGV`` in-process."""
    return run_command(["report", *argv])


@pytest.fixture
def sweep(six_job_sweep):
    proc, sweep_dir, tmp = six_job_sweep
    assert proc.returncode == 3, proc.stderr
    return sweep_dir, tmp / "prices.yaml"


def records_of(sweep_dir, jobs):
    return [run_json(sweep_dir / str(job)) for job in jobs]


def cost(record):
    price = {"worker": PRICES[record["header"]["worker"]["model"]], "grader": PRICES["demo"]}
    return sum(
        (record["task"]["usage"][role]["input_tokens"] * price[role][0] + record["task"]["usage"][role]["output_tokens"] * price[role][1]) / 1e6
        for role in ("worker", "grader")
    ) if record["task"] else 0.0


def test_report_md_numbers_match_the_records(sweep):
    sweep_dir, _ = sweep
    text = (sweep_dir / "report.md").read_text()
    assert ("partial: 5 of 5 runs finished, 1 job not started; 5 runs in 6 jobs: 3 satisfied, 2 max_iterations_reached; "
            "satisfied rate 60.0%") in text
    groups = md_table(text, "## By configuration")
    # one group per configuration: each job here ran its own worker and script
    assert [g["configuration"] for g in groups] == [
        f"worker.model=scripted:{worker}, worker.script=\u2026/{script}.yaml"
        for worker, script in JOBS.values()]
    expected = {
        # satisfied, mean passes to satisfied, distribution, statuses, grading verdicts
        "good": ("1/1 (100.0%)", "1.00", "1 pass: 1", "satisfied 1", "satisfied 1"),
        "revise": ("1/1 (100.0%)", "2.00", "2 passes: 1", "satisfied 1", "needs_revision 1, satisfied 1"),
        "stuck": ("0/1 (0.0%)", "n/a", "-", "max_iterations_reached 1", "needs_revision 1, max_iterations_reached 1"),
    }
    for group, (job, (worker, script)) in zip(groups, JOBS.items()):
        [record] = records_of(sweep_dir, [job])
        usage, total = record["task"]["usage"], cost(record)
        assert total > 0
        assert {k: v for k, v in group.items() if k != "configuration"} == {
            "worker / grader / rubric": f"scripted:{worker} / scripted:demo / haiku", "tasks": "1", "runs": "1",
            "outside the rates": "-", "satisfied": expected[script][0],
            **dict.fromkeys(("satisfied@1", "satisfied@k", "satisfied^k"), expected[script][0].split("(")[1].rstrip(")")),
            "k": "1", "mean passes to satisfied": expected[script][1], "runs by passes to satisfied": expected[script][2],
            "statuses": expected[script][3],
            # haikus fit the grader's window: no pass saw a cut view
            "grading verdicts": f"{expected[script][4]}; cut view 0/{record['task']['iterations']} (0.0%)",
            "worker tokens/run": fmt_num(usage["worker"]["total_tokens"], 0), "grader tokens/run": fmt_num(usage["grader"]["total_tokens"], 0),
            "est. USD/run": fmt_num(total, 4), "est. USD": fmt_num(total, 4), "task s/run": fmt_num(record["task"]["wall_seconds"]),
        }
    criteria = text.split("## Criteria")[1]
    revise = md_table(criteria, "### worker.model=scripted:alpha, worker.script=\u2026/revise.yaml")
    assert revise == [{"criterion": A, "met at first grading": "1/1 (100.0%)", "met at final grading": "1/1 (100.0%)"},
                      {"criterion": B, "met at first grading": "0/1 (0.0%)", "met at final grading": "1/1 (100.0%)"}]
    assert "No price for" not in text


def test_a_job_that_fails_to_start_is_a_job_row_not_a_task(sweep):
    """Finding 9: a job that failed to start was a run with a phantom task ``-``."""
    sweep_dir, _ = sweep
    text = (sweep_dir / "report.md").read_text()
    [job] = md_table(text, "## Jobs that did not start")
    assert (job["job"], job["status"]) == ("3", "error") and job["error"].startswith("IsADirectoryError:")
    assert "worker.model=scripted\\:beta" in job["overrides"]
    runs = md_table(text, "## Runs")
    assert [r["job"] for r in runs] == ["0", "1", "2", "4", "5"] and "-" not in {r.get("task") for r in runs}
    assert sum(int(g["tasks"]) for g in md_table(text, "## By configuration")) == 5
    tasks = [json.loads(line) for line in (sweep_dir / "summary_tasks.jsonl").read_text().splitlines()]
    assert [t["job"] for t in tasks] == ["0", "1", "2", "4", "5"]
    rows = [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]
    assert (rows[3]["job"], rows[3]["runs"], rows[3]["status"]) == ("3", 0, "error")
    assert {row["partial"] for row in rows} == {"partial: 5 of 5 runs finished, 1 job not started"}


def test_report_command_rewrites_everything_and_gates(sweep, tmp_path):
    sweep_dir, prices = sweep
    copy = tmp_path / "sweep"
    shutil.copytree(sweep_dir, copy)
    for name in ("summary.jsonl", "summary.csv", "report.md", "report.html"):
        (copy / name).unlink()
    proc = run_cli("report", str(copy), "--prices", str(prices), "--fail-under", "0.51", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    # the gate counts the job that did not start as one run not satisfied: 3 of 6
    assert re.search(r"satisfied rate 60\.0%, pooled over 5 configurations \((?:[^;]+: (?:100|0)\.0%; ){4}1 more in the table\) "
                     r"\(fail_under 51\.0%; over every run and job not started: 50\.0%\) -> exit 4", proc.stdout)
    for name in ("summary.jsonl", "summary.csv", "report.md", "report.html"):
        # the same files, but for the run dirs: where the runs are now
        assert (copy / name).read_text().replace(str(copy), str(sweep_dir)) == (sweep_dir / name).read_text(), name
    assert report_main([str(copy), "--fail-under", "0.5"]) == 0


def test_report_on_a_single_run_dir_with_default_prices(sweep, tmp_path):
    sweep_dir, _ = sweep
    run_dir = tmp_path / "run"
    shutil.copytree(sweep_dir / "2", run_dir)
    assert report_main([str(run_dir)]) == 0
    text = (run_dir / "report.md").read_text()
    assert "1 run: 1 satisfied; satisfied rate 100.0%" in text and "partial" not in text and "pooled" not in text
    assert "No price for: `scripted:alpha`, `scripted:demo`" in text
    [group] = md_table(text, "## By configuration")
    assert [group[k] for k in ("configuration", "tasks", "runs", "satisfied", "satisfied@1", "k", "mean passes to satisfied")] == [
        "scripted:alpha / scripted:demo / haiku", "1", "1", "1/1 (100.0%)", "100.0%", "1", "2.00"]
    assert "## Tasks x configurations" not in text and "| task |" not in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (lambda sweep_dir, tmp: [sweep_dir, "--fail-under", "1.5"], "--fail-under must be a fraction from 0 to 1"),
        (lambda sweep_dir, tmp: [sweep_dir, "--prices", f"{tmp}/nope.yaml"], "nope.yaml cannot be read"),
        (lambda sweep_dir, tmp: [f"{tmp}/missing"], "missing is not a directory"),
        (lambda sweep_dir, tmp: [str(tmp)], "no runs under"),
    ],
)
def test_report_usage_errors_exit_2(sweep, tmp_path, capsys, argv, message):
    sweep_dir, _ = sweep
    with pytest.raises(SystemExit) as exc:
        report_main(argv(str(sweep_dir), tmp_path))
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_html_report_in_headless_chromium(sweep, tmp_path):
    sweep_dir, _ = sweep
    page = sweep_dir / "report.html"
    html = page.read_text()
    assert "<script src" not in html and "<link" not in html
    assert not [u for u in html.replace('xmlns="http://www.w3.org/2000/svg"', "").split('"') if u.startswith(("http:", "https:"))]

    dom = Elements(browse(f"{page.as_uri()}#run-3", tmp_path / "profile", "--dump-dom"))
    details = {a["id"]: "open" in a for a in dom.all("details") if a.get("id", "").startswith("run-")}
    assert details == {f"run-{i}": i == 3 for i in range(5)}
    assert len(dom.all("tr", **{"class": "trail-row"})) == 1, "an opened trail is drawn in a row of its own"
    headers = dom.all("th")
    pagers = 2 * len(dom.all("div", **{"class": "controls"}))
    assert headers and len(dom.all("button")) == len(headers) + pagers, "the table-sorting script did not run"
    assert [a["data-value"] for a in dom.all("rect", **{"class": "rate"})] == ["1.0000", "1.0000", "1.0000", "0.0000", "0.0000"]
    assert [a["data-value"] for a in dom.all("rect", **{"class": "iterations"})] == ["1.0000", "1.0000", "2.0000"]
    links = [a["href"] for a in dom.all("a")]
    assert {f"#runs?group={g}" for g in range(5)} <= set(links)
    assert {f"#runs?group={g}&task=Write+a+haiku+about+spring." for g in range(5)} <= set(links)


def test_tables_and_an_opened_trail_fit_a_1400_px_window(sweep, tmp_path):
    """Finding 11: at 1,400 px wide, tables and opened trails were cut off at the right."""
    sweep_dir, _ = sweep
    shot = tmp_path / "report.png"
    seen = layout(f"{(sweep_dir / 'report.html').as_uri()}#run-2", 1400, shot)
    assert seen["page"] <= 1400, f"the page is {seen['page']} px wide"
    assert seen["tables"] and all(right <= 1400 for right in seen["tables"].values()), seen["tables"]
    assert seen["trail"] is not None and seen["trail"] <= 1400, "the opened trail is wider than the window"
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 20_000


def test_a_sweep_over_max_iterations_reads_as_two_groups(tmp_path):
    """Finding 1: a sweep over ``grader.max_iterations=1,3`` was one row, ``k 2``, ``pass^k 2/5``."""
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", "worker=scripted", "grader=scripted", "rubric=code", "grader.max_iterations=1,3",
                   "run.console=false", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    text = (sweep_dir / "report.md").read_text()
    groups = md_table(text, "## By configuration")
    assert [(g["configuration"], g["runs"], g["k"], g["satisfied"]) for g in groups] == [
        ("grader.max_iterations=1", "1", "1", "0/1 (0.0%)"), ("grader.max_iterations=3", "1", "1", "1/1 (100.0%)")]
    judges = md_table(text, "## Graders against hidden verification")
    assert [j["configuration"] for j in judges] == ["grader.max_iterations=1", "grader.max_iterations=3"]
    [task] = md_table(text, "## Tasks x configurations")
    assert (task["grader.max_iterations=1"], task["grader.max_iterations=3"], task["missed by"]) == (
        "0/1", "1/1", "grader.max_iterations=1")
    assert [r["configuration"] for r in md_table(text, "## Runs")] == ["grader.max_iterations=1", "grader.max_iterations=3"]


def test_the_header_gives_elapsed_time_and_summed_task_time(sweep):
    """Finding 10: the header's "wall time" was a sum over runs, not the time that went by."""
    sweep_dir, _ = sweep
    text = (sweep_dir / "report.md").read_text()
    records = records_of(sweep_dir, range(6))
    summed = sum(r["task"]["wall_seconds"] for r in records if r["task"])
    spans = sorted((datetime.fromisoformat(r[0]), datetime.fromisoformat(r[1])) for r in
                   [(job["started_at"], job["ended_at"]) for job in records] + [(job["task"]["started_at"], job["task"]["ended_at"])
                                                                               for job in records if job["task"]] if r[0] and r[1])
    going, (start, end) = 0.0, spans[0]  # the time during which some job ran: the jobs ran one after another
    for next_start, next_end in spans[1:]:
        if next_start > end:
            going, start = going + (end - start).total_seconds(), next_start
        end = max(end, next_end)
    going += (end - start).total_seconds()
    assert f"elapsed {fmt_num(going, 1)} s (summed task time {fmt_num(summed, 1)} s)" in text
    assert going < (spans[-1][1] - spans[0][0]).total_seconds()  # the pauses between jobs are not counted


def test_a_resumed_run_counts_its_resume_and_both_parts_of_its_time(tmp_path):
    """Finding 10: the run record's ``resumed`` stayed 0 after a resume, and a resumed task's time covered only
    the resumed part."""
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 2}], grader=[verdict("satisfied", ("c", True))])
    run_dir = tmp_path / "run"
    args = ["worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}",
            f"hydra.run.dir={run_dir}"]
    with cli_process(*args, cwd=tmp_path) as proc:
        deadline = time.monotonic() + 60
        while "model_call_start" not in ((run_dir / "events.jsonl").read_text() if (run_dir / "events.jsonl").exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None, "the run never called its worker"
            time.sleep(0.05)
        time.sleep(0.3)  # inside the slow worker call now
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    before = run_json(run_dir)["task"]["wall_seconds"]
    assert before >= 1.5  # the step in flight finished before the run stopped
    assert rubric_runner.resume(run_dir).exit_code == 0
    record = run_json(run_dir)
    assert (record["resumed"], record["task"]["resumed"]) == (1, 1)
    assert record["task"]["wall_seconds"] > before
    assert report_main([str(run_dir)]) == 0
    [row] = [json.loads(line) for line in (run_dir / "summary.jsonl").read_text().splitlines()]
    [task] = [json.loads(line) for line in (run_dir / "summary_tasks.jsonl").read_text().splitlines()]
    assert (row["resumed"], task["resumed"], task["wall_seconds"]) == (1, 1, record["task"]["wall_seconds"])
