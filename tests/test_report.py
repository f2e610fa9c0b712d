"""Reports from a real sweep: report.md numbers against the records, the report command and its
gating, and report.html in a real headless browser."""

from __future__ import annotations

import json
import shutil

import pytest
from browser import Elements, browse
from conftest import run_cli
from sweeps import PRICES, A, B

from rubric_runner.cli import run_command


def report_main(argv):
    """``rubric-runner report ARGV`` in-process."""
    return run_command(["report", *argv])


@pytest.fixture
def sweep(six_job_sweep):
    proc, sweep_dir, tmp = six_job_sweep
    assert proc.returncode == 3, proc.stderr
    return sweep_dir, tmp / "prices.yaml"


def records_of(sweep_dir, jobs):
    return [json.loads((sweep_dir / str(job) / "result.json").read_text()) for job in jobs]


def cost(record):
    price = {"worker": PRICES[record["header"]["worker"]["model"]], "grader": PRICES["demo"]}
    return sum(
        (record["task"]["usage"][role]["input_tokens"] * price[role][0] + record["task"]["usage"][role]["output_tokens"] * price[role][1]) / 1e6
        for role in ("worker", "grader")
    ) if record["task"] else 0.0


def table_rows(markdown, first_cell):
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in markdown.splitlines()
        if line.startswith(f"| {first_cell} |")
    ]


def test_report_md_numbers_match_the_records(sweep):
    sweep_dir, _ = sweep
    text = (sweep_dir / "report.md").read_text()
    assert "6 runs: 3 satisfied, 2 max_iterations_reached, 1 error; satisfied rate 50.0%" in text
    expected = {
        # worker: jobs, satisfied, mean iterations, distribution, statuses, grading verdicts
        "scripted:alpha": ([0, 2, 4], "2/3 (66.7%)", "1.50", "1 pass: 1, 2 passes: 1",
                           "satisfied 2, max_iterations_reached 1", "satisfied 2, needs_revision 2, max_iterations_reached 1"),
        "scripted:beta": ([1, 3, 5], "1/3 (33.3%)", "1.00", "1 pass: 1",
                          "satisfied 1, error 1, max_iterations_reached 1", "satisfied 1, needs_revision 1, max_iterations_reached 1"),
    }
    for worker, (jobs, satisfied, mean, distribution, statuses, verdicts) in expected.items():
        [row] = [r for r in table_rows(text, worker) if len(r) == 18]
        records = records_of(sweep_dir, jobs)
        tasks = [r["task"] for r in records if r["task"]]  # the crashed job never got to its task
        tokens = {role: sum(t["usage"][role]["total_tokens"] for t in tasks) / 3 for role in ("worker", "grader")}
        total = sum(cost(r) for r in records)
        wall = sum(t["wall_seconds"] or 0 for t in tasks) / 3  # a run is a task: its own time
        assert row == [
            worker, "scripted:demo", "haiku", "1", "3", satisfied, "1/1 (100.0%)", "0/1 (0.0%)", "3", mean, distribution, statuses, verdicts,
            f"{tokens['worker']:,.0f}", f"{tokens['grader']:,.0f}", f"{total / 3:,.4f}", f"{total:,.4f}", f"{wall:.2f}",
        ]
        assert total > 0
    criteria = text.split("## Criteria")[1]
    alpha, beta = criteria.split("### scripted:alpha / scripted:demo / haiku")[1].split("### scripted:beta")
    assert table_rows(alpha, A) == [[A, "2/3 (66.7%)", "2/3 (66.7%)"]]
    assert table_rows(alpha, B) == [[B, "1/3 (33.3%)", "2/3 (66.7%)"]]
    assert table_rows(beta, A) == [[A, "1/2 (50.0%)", "1/2 (50.0%)"]]
    assert table_rows(beta, B) == [[B, "1/2 (50.0%)", "1/2 (50.0%)"]]
    [crashed] = table_rows(text, "3")
    assert crashed[4] == "error" and crashed[-1].startswith("IsADirectoryError:")
    assert "No price for" not in text


def test_report_command_rewrites_everything_and_gates(sweep, tmp_path):
    sweep_dir, prices = sweep
    copy = tmp_path / "sweep"
    shutil.copytree(sweep_dir, copy)
    for name in ("summary.jsonl", "summary.csv", "report.md", "report.html"):
        (copy / name).unlink()
    proc = run_cli("report", str(copy), "--prices", str(prices), "--fail-under", "0.51", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "satisfied rate 50.0% (fail_under 51.0%) -> exit 4" in proc.stdout
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
    assert "1 run: 1 satisfied; satisfied rate 100.0%" in text
    assert "No price for: `scripted:alpha`, `scripted:demo`" in text
    assert [r[:10] for r in table_rows(text, "scripted:alpha") if len(r) == 18] == [
        ["scripted:alpha", "scripted:demo", "haiku", "1", "1", "1/1 (100.0%)", "1/1 (100.0%)", "1/1 (100.0%)", "1", "2.00"]]
    assert "## Tasks x models" not in text and "| task |" not in text


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
    assert details == {f"run-{i}": i == 3 for i in range(6)}
    headers = dom.all("th")
    pagers = 2 * len(dom.all("div", **{"class": "controls"}))
    assert headers and len(dom.all("button")) == len(headers) + pagers, "the table-sorting script did not run"
    assert [a["data-value"] for a in dom.all("rect", **{"class": "rate"})] == ["0.6667", "0.3333"]
    assert [a["data-value"] for a in dom.all("rect", **{"class": "iterations"})] == ["1.5000", "1.0000"]
    assert [a["href"] for a in dom.all("a")] == ["#runs?group=0", "#runs?group=1"] + [
        f"#runs?group={g}&task=Write+a+haiku+about+spring." for g in (0, 1)]

    shot = tmp_path / "report.png"
    browse(page.as_uri(), tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,1400")
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000
