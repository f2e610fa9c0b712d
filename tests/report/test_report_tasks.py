"""Reports of task sets: a sweep of two scripted workers over a ten-task set, each failing different
tasks, counted per task in the summaries, the reports, the task x model matrix and the exit code;
report.html's filters, sorting and revision diffs in headless chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from support.browser import Page, browse, timed_dom
from support.helpers import SCRIPTED_EVIDENCE, md_table, run_cli, verdict
from support.many_runs import write_task_job, write_task_sweep

from rubric_runner.cli import run_command
from rubric_runner.records import Status

TASKS = [f"t{i}" for i in range(10)]
CRITERION = "On topic"
FAILS = {"alpha": {"t1", "t4", "t7"}, "beta": {"t4", "t8"}}
"""The tasks each worker never gets satisfied (alpha: max_iterations_reached; beta's t8: failed)."""
REVISED = ("alpha", "t2")
"""A task satisfied on the second pass, after a revision."""


def _turns(worker: str, task: str) -> dict:
    ok = verdict("satisfied", (CRITERION, True), explanation="fine")
    again = verdict("needs_revision", (CRITERION, False), explanation="not yet")
    if (worker, task) == REVISED:
        return {"worker": [{"content": "A draft about the sea."}, {"content": "A final poem about spring."}],
                "grader": [again, ok]}
    if task in FAILS[worker] and task == "t8":
        return {"worker": [{"content": "off topic"}], "grader": [verdict("failed", (CRITERION, False), explanation="gave up")]}
    if task in FAILS[worker]:
        return {"worker": [{"content": "draft 1"}, {"content": "draft 2"}], "grader": [again, again]}
    return {"worker": [{"content": f"answer to {task}"}], "grader": [ok]}


@pytest.fixture(scope="module")
def task_sweep(tmp_path_factory):
    """Workers scripted:alpha and scripted:beta, ten tasks, two repeats each: 40 runs in 2 jobs."""
    tmp = tmp_path_factory.mktemp("tasks")
    data = tmp / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": t, "task": f"write about {t}"}) + "\n" for t in TASKS))
    for worker in FAILS:
        script = {"worker": [], "grader": [], "tasks": {t: _turns(worker, t) for t in TASKS}}
        (tmp / f"scripted:{worker}.yaml").write_text(json.dumps(script))
    sweep_dir = tmp / "sweep"
    proc = run_cli(
        "-m", "worker=scripted", "grader=scripted", "run.console=false", "rubric=haiku", SCRIPTED_EVIDENCE, f"rubric.dataset={data}",
        "worker.model=scripted:alpha,scripted:beta", f"worker.script={tmp}/${{worker.model}}.yaml",
        "grader.script=${worker.script}", "grader.max_iterations=2", "run.repeats=2", "run.concurrency=4",
        "sweep.fail_under=0.76", f"hydra.sweep.dir={sweep_dir}", cwd=tmp,
    )
    return proc, sweep_dir


def _status(worker: str, task: str) -> str:
    if task not in FAILS[worker]:
        return "satisfied"
    return "failed" if task == "t8" else "max_iterations_reached"


def _md_rows(text: str, first: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in text.splitlines() if line.startswith(f"| {first} |")]


def _label(worker: str) -> str:
    """A group's label in the task sweep: the override in which the two workers' configurations differ (the scripts'
    paths, ``${worker.model}.yaml``, are given alike)."""
    return f"worker.model=scripted:{worker}"


def test_fail_under_counts_runs_of_tasks(task_sweep):
    proc, _ = task_sweep
    assert proc.returncode == 4, proc.stderr
    assert ("sweep: 40 runs in 2 jobs: 30 satisfied, 8 max_iterations_reached, 2 failed; satisfied rate 75.0%, pooled over "
            f"2 configurations ({_label('alpha')}: 70.0%; {_label('beta')}: 80.0%) (fail_under 76.0%) -> exit 4") in proc.stdout


def test_report_command_gates_on_runs(task_sweep, capsys):
    _, sweep_dir = task_sweep
    assert run_command(["report", str(sweep_dir), "--fail-under", "0.75"]) == 0
    assert "40 runs in 2 jobs" in capsys.readouterr().out
    assert run_command(["report", str(sweep_dir)]) == 0


def test_summaries_have_a_row_per_job_and_per_task_run(task_sweep):
    _, sweep_dir = task_sweep
    jobs = [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]
    assert [(j["worker"], j["status"], j["runs"], j["satisfied"]) for j in jobs] == [
        ("scripted:alpha", "max_iterations_reached", 20, 14), ("scripted:beta", "failed", 20, 16)]
    rows = [json.loads(line) for line in (sweep_dir / "summary_tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 40
    expected = [(job, f"scripted:{w}", t, r, _status(w, t)) for job, w in (("0", "alpha"), ("1", "beta"))
                for t in TASKS for r in (0, 1)]
    assert [(r["job"], r["worker"], r["task_id"], r["repeat"], r["status"]) for r in rows] == expected
    assert all(Path(r["run_dir"]) == sweep_dir / r["job"] / "tasks" / f"{r['task_id']}-r{r['repeat']}" for r in rows)
    revised = next(r for r in rows if (r["worker"], r["task_id"]) == ("scripted:alpha", "t2"))
    assert revised["iterations"] == 2 and revised["worker_tokens"] > 0
    csv_lines = (sweep_dir / "summary_tasks.csv").read_text().splitlines()
    assert csv_lines[0].startswith("job,task_id,repeat,worker") and len(csv_lines) == 41


def test_report_md_counts_tasks_per_group_and_shows_the_matrix(task_sweep):
    _, sweep_dir = task_sweep
    text = (sweep_dir / "report.md").read_text()
    assert "40 runs in 2 jobs: 30 satisfied, 8 max_iterations_reached, 2 failed; satisfied rate 75.0%" in text
    # the header's rate pools the two configurations: it says so, and gives each one's own
    assert f"satisfied rate 75.0%, pooled over 2 configurations ({_label('alpha')}: 70.0%; {_label('beta')}: 80.0%)" in text
    groups = {g["configuration"]: [g[k] for k in ("tasks", "runs", "satisfied", "satisfied@1", "satisfied@k", "satisfied^k", "k")]
              for g in md_table(text, "## By configuration")}
    assert groups == {
        _label("alpha"): ["10", "20", "14/20 (70.0%)", "70.0%", "70.0%", "70.0%", "2"],
        _label("beta"): ["10", "20", "16/20 (80.0%)", "80.0%", "80.0%", "80.0%", "2"],
    }
    matrix = {row["task"]: [row[_label("alpha")], row[_label("beta")], row["missed by"]] for row in md_table(text, "## Tasks x configurations")}
    missed = {t: sorted(w for w in FAILS if t in FAILS[w]) for t in TASKS}
    assert matrix == {
        t: ["0/2" if t in FAILS["alpha"] else "2/2", "0/2" if t in FAILS["beta"] else "2/2",
            ", ".join(_label(w) for w in missed[t]) or "-"]
        for t in TASKS
    }
    criteria = text.split(f"### {_label('alpha')}")[1].split("###")[0]
    assert _md_rows(criteria, CRITERION) == [[CRITERION, "12/20 (60.0%)", "14/20 (70.0%)"]]


def test_task_records_keep_each_graded_attempt(task_sweep):
    _, sweep_dir = task_sweep
    record = json.loads((sweep_dir / "0" / "tasks" / "t2-r0" / "result.json").read_text())
    assert record["attempts"] == ["A draft about the sea.", "A final poem about spring."]
    stuck = json.loads((sweep_dir / "0" / "tasks" / "t1-r1" / "result.json").read_text())
    assert stuck["attempts"] == ["draft 1", "draft 2"]


def _dom(sweep_dir: Path, hash_: str, profile: Path) -> str:
    return browse(f"{(sweep_dir / 'report.html').as_uri()}#{hash_}", profile, "--dump-dom")


def _page(sweep_dir: Path, hash_: str, profile: Path) -> Page:
    return Page(_dom(sweep_dir, hash_, profile))


def test_html_filters_by_group_status_task_and_text(task_sweep, tmp_path):
    _, sweep_dir = task_sweep
    page = _page(sweep_dir, "runs?group=0&status=max_iterations_reached", tmp_path / "p")
    columns = ["job", "task", "repeat", "configuration"]
    shown = [dict(zip(columns, row)) for row in page.tables["runs"]]
    assert [(r["task"], r["repeat"], r["configuration"]) for r in shown] == [
        (t, str(r), _label("alpha")) for t in ("t1", "t4", "t7") for r in (0, 1)]
    assert page.texts["runs-shown"].strip() == "1\u20136 of 6 (filtered from 40)"

    page = _page(sweep_dir, "runs?task=t8", tmp_path / "p")
    assert [(row[3], row[4]) for row in page.tables["runs"]] == [
        (_label("alpha"), "satisfied"), (_label("alpha"), "satisfied"), (_label("beta"), "failed"), (_label("beta"), "failed")]

    page = _page(sweep_dir, "runs?q=max_iter", tmp_path / "p")
    assert len(page.tables["runs"]) == 8 and {row[4] for row in page.tables["runs"]} == {"max_iterations_reached"}

    page = _page(sweep_dir, "runs", tmp_path / "p")
    assert len(page.tables["runs"]) == 40 and page.texts["runs-shown"].strip() == "1\u201340 of 40"
    assert [a["task"] for a in page.attrs["runs"]][:4] == ["t0", "t0", "t1", "t1"]


def test_html_matrix_sorts_to_what_only_one_model_misses(task_sweep, tmp_path):
    _, sweep_dir = task_sweep
    page = _page(sweep_dir, "matrix?sort=missed+by&order=descending", tmp_path / "p")
    rows = [(row[1], row[4]) for row in page.tables["matrix"]]
    assert rows[:4] == [("t8", _label("beta")), ("t4", f"{_label('alpha')}, {_label('beta')}"), ("t1", _label("alpha")),
                        ("t7", _label("alpha"))]
    page = _page(sweep_dir, f"matrix?{urlencode({'sort': _label('alpha'), 'order': 'ascending'})}", tmp_path / "p")
    assert [row[1] for row in page.tables["matrix"]][:3] == ["t1", "t4", "t7"]


def test_html_trail_shows_the_diff_of_each_revision_beside_its_gaps(task_sweep, tmp_path):
    _, sweep_dir = task_sweep
    index = 2 * TASKS.index("t2")  # job 0 (alpha), t2's first repeat
    dom = _dom(sweep_dir, f"run-{index}", tmp_path / "p")
    page = Page(dom)
    trail = page.texts["trail"]
    pass_and_diff = r'<li><div class="passes"><div><span class="status unsatisfied">needs_revision</span>.*?</ul></div><div class="diff">'
    assert re.search(pass_and_diff, dom), "each pass is a numbered list item, its diff beside its verdict and gaps"
    assert "needs_revision" in trail and f"\u2717 {CRITERION}: fix {CRITERION}" in trail
    assert page.texts["diff"] == "The answer after this pass: A draft final poem about the seaspring."
    assert (page.texts["del"], page.texts["ins"]) == ("draft the sea", "final poem spring")
    html = (sweep_dir / "report.html").read_text()
    assert "A draft about the sea" not in html.split('id="trails"')[0], "trails are drawn from the JSON, not the table"


def test_html_ignores_a_malformed_link(task_sweep, tmp_path):
    _, sweep_dir = task_sweep
    page = _page(sweep_dir, "runs%E0%A4%A", tmp_path / "p")  # browse fails on an error the page's script raised
    assert page.texts["runs-shown"].strip() == "1\u201340 of 40"


def test_pass_at_k_counts_tasks_satisfied_once_and_pass_hat_k_every_time(tmp_path, capsys):
    write_task_sweep(tmp_path, jobs=1, tasks=30, repeats=2)
    assert run_command(["report", str(tmp_path)]) == 0
    [group] = md_table((tmp_path / "report.md").read_text(), "## By configuration")
    # never satisfied: tasks 0, 7, 14, 21, 28; satisfied once: the other multiples of 3; twice: the 17 others
    assert [group[k] for k in ("tasks", "runs", "satisfied", "satisfied@1", "satisfied@k", "satisfied^k", "k")] == [
        "30", "60", "42/60 (70.0%)", "70.0%", "83.3%", "56.7%", "2"]


def test_single_task_jobs_of_different_tasks_count_as_those_tasks(tmp_path, capsys):
    """A sweep over ``rubric.task`` values: each job is one run of its own task (alpha misses spring,
    beta the sea)."""
    for worker, missed in (("alpha", "spring"), ("beta", "sea")):
        for task in ("sea", "spring"):
            turns = _turns("beta", "t8") if task == missed else _turns(worker, "t0")
            (tmp_path / f"scripted:{worker}-{task}.yaml").write_text(json.dumps(turns))
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(
        "-m", "worker=scripted", "grader=scripted", "run.console=false", "rubric=haiku", SCRIPTED_EVIDENCE, "rubric.task=sea,spring",
        "worker.model=scripted:alpha,scripted:beta", f"worker.script={tmp_path}/${{worker.model}}-${{rubric.task}}.yaml",
        "grader.script=${worker.script}", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    text = (sweep_dir / "report.md").read_text()
    # the scripts' paths name the task: they vary with it, so they are no part of the configuration
    groups = {g["configuration"]: [g[k] for k in ("tasks", "runs", "satisfied", "satisfied@1", "k")]
              for g in md_table(text, "## By configuration")}
    workers = ("worker.model=scripted:alpha", "worker.model=scripted:beta")
    assert groups == {w: ["2", "2", "1/2 (50.0%)", "50.0%", "1"] for w in workers}
    assert {row["task"]: [row[workers[0]], row[workers[1]], row["missed by"]] for row in md_table(text, "## Tasks x configurations")} == {
        "sea": ["1/1", "0/1", workers[1]], "spring": ["0/1", "1/1", workers[0]]}
    page = _page(sweep_dir, "runs?task=spring", tmp_path / "p")
    assert [(row[1], row[3], row[4]) for row in page.tables["runs"]] == [
        ("spring", workers[0], "failed"), ("spring", workers[1], "satisfied")]


def test_ten_thousand_runs_report_is_bounded_and_opens_and_filters_in_chromium(tmp_path, capsys):
    sweep_dir = tmp_path / "big"
    write_task_sweep(sweep_dir, jobs=2, tasks=5000)
    assert run_command(["report", str(sweep_dir)]) == 0
    assert "10000 runs in 2 jobs: 8285 satisfied, 1000 failed, 715 max_iterations_reached" in capsys.readouterr().out
    page_file = sweep_dir / "report.html"
    assert page_file.stat().st_size / 10_000 < 3000, "report.html grows by more than 3 KB a run"

    dom, seconds = timed_dom(f"{page_file.as_uri()}#runs?status=failed&q=task0001", tmp_path / "p")
    page = Page(dom)
    assert [row[1] for row in page.tables["runs"]] == ["task00010", "task00015"]
    assert page.texts["runs-shown"].strip() == "1\u20132 of 2 (filtered from 10,000)"
    assert len(page.tables["matrix"]) == 100 and page.texts["matrix-shown"].strip() == "1\u2013100 of 5,000"
    assert seconds < 60, f"chromium took {seconds:.1f} s to open and filter 10,000 runs"

    dom, seconds = timed_dom(f"{page_file.as_uri()}#run-9998", tmp_path / "p")
    page = Page(dom)
    assert page.texts["runs-shown"].strip() == "9,901\u201310,000 of 10,000"
    assert [row[1] for row in page.tables["runs"]][-2:] == ["task04998", "task04999"]
    assert "needs_revision" in page.texts["trail"]
    removed, added = page.texts["del"], page.texts["ins"]
    assert removed.count("seen") == added.count("found") == 9
    assert not re.sub("seen", "", removed).strip() and not re.sub("found", "", added).strip(" )")
    assert seconds < 60, f"chromium took {seconds:.1f} s to open run 9998 of 10,000"


def test_reports_hold_what_they_read_of_each_task_not_its_record(tmp_path):
    """A report of 10,000 tasks holds every task at once: about 2 KB each here, not its record (about 12 KB)."""
    import tracemalloc

    from rubric_runner.records import collect
    from rubric_runner.report import expand

    write_task_sweep(tmp_path, jobs=1, tasks=500)
    jobs = collect(tmp_path)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        runs = expand(jobs)
        per_run = (tracemalloc.get_traced_memory()[0] - before) / len(runs)
    finally:
        tracemalloc.stop()
    assert len(runs) == 500 and runs[0].trail.startswith('{"passes":')
    assert per_run < 4000, f"each run of a report holds {per_run:.0f} bytes"


def test_reports_are_written_as_they_are_drawn_not_held_whole(tmp_path):
    """Writing report.md and report.html holds less than the two files' size: each is streamed to
    disk a few hundred rows at a time (holding them whole took over twice their size)."""
    import tracemalloc

    from rubric_runner.records import collect
    from rubric_runner.report import expand, write_reports

    write_task_sweep(tmp_path, jobs=2, tasks=500)
    jobs = collect(tmp_path)
    runs = expand(jobs)
    write_reports(tmp_path, jobs[:1], runs[:2])  # templates compiled outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        paths = write_reports(tmp_path, jobs, runs)
        held = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    size = sum(path.stat().st_size for path in paths)
    assert "<tr data-group=" in paths[1].read_text() and held < size, f"held {held:,} bytes to write {size:,}"


CONFIG = {"worker": {"model": "scripted:w", "script": "w.yaml"}, "grader": {"model": "scripted:judge", "max_iterations": 3},
          "rubric": {"name": "code_tasks", "tasks": [], "text": "- passes"}, "run": {"concurrency": 8}}
"""A resolved config, as a run's header holds it."""


def _config(**changes: dict) -> dict:
    return {section: {**values, **changes.get(section, {})} for section, values in CONFIG.items()}


def _report(root: Path) -> str:
    from rubric_runner.records import collect
    from rubric_runner.report import write_all

    write_all(root, collect(root))
    return (root / "report.md").read_text()


def test_shards_of_one_configuration_merge_and_other_configurations_stay_apart(tmp_path):
    """Finding 1: groups were (worker, grader, rubric); now a configuration, whatever tasks each job was given."""
    statuses = [Status.SATISFIED] * 4 + [Status.FAILED]
    write_task_job(tmp_path / "0", statuses, _config(rubric={"tasks": ["0:5"]}), ("rubric.tasks=[0:5]", "run.concurrency=8"))
    write_task_job(tmp_path / "1", statuses, _config(rubric={"tasks": ["5:10"]}, run={"concurrency": 2}),
                   ("rubric.tasks=[5:10]", "run.concurrency=2"), first=5)
    write_task_job(tmp_path / "2", statuses, _config(grader={"max_iterations": 1}), ("grader.max_iterations=1",))
    text = _report(tmp_path)
    groups = {g["configuration"]: (g["tasks"], g["runs"], g["satisfied"]) for g in md_table(text, "## By configuration")}
    assert groups == {"grader.max_iterations=3": ("10", "10", "8/10 (80.0%)"), "grader.max_iterations=1": ("5", "5", "4/5 (80.0%)")}
    [row] = [r for r in md_table(text, "## Tasks x configurations") if r["task"] == "t7"]
    assert (row["grader.max_iterations=3"], row["grader.max_iterations=1"]) == ("1/1", "-")


def test_an_interrupted_run_reads_as_partial(tmp_path):
    """Finding 2: ``10 runs: 8 interrupted, 2 satisfied; satisfied rate 20.0%`` with no banner."""
    write_task_job(tmp_path, [Status.SATISFIED] * 2 + [Status.INTERRUPTED] * 8, CONFIG)
    text = _report(tmp_path)
    assert "**Partial: 2 of 10 runs finished.**" in text
    assert ("partial: 2 of 10 runs finished; 10 runs in 1 job: 8 interrupted, 2 satisfied; satisfied rate 100.0% "
            "of the 2 decided, 8 unfinished") in text
    [group] = md_table(text, "## By configuration")
    assert (group["runs"], group["outside the rates"], group["satisfied"]) == ("10", "interrupted 8", "2/2 (100.0%)")
    assert "Partial: 2 of 10 runs finished." in (tmp_path / "report.html").read_text()
    [row] = [json.loads(line) for line in (tmp_path / "summary.jsonl").read_text().splitlines()]
    assert (row["finished"], row["unfinished"], row["satisfied_rate"], row["partial"]) == (
        2, 8, 1.0, "partial: 2 of 10 runs finished")


def test_tasks_a_budget_kept_from_running_are_counted_beside_the_rates(tmp_path, capsys):
    """Finding 2: budget ``not_run`` tasks counted as not satisfied in the rates."""
    write_task_job(tmp_path, [Status.SATISFIED, Status.SATISFIED, Status.FAILED, Status.NOT_RUN, Status.NOT_RUN], CONFIG)
    assert run_command(["report", str(tmp_path)]) == 0
    assert ("report: partial: 3 of 5 runs finished; 5 runs in 1 job: 2 satisfied, 2 not_run, 1 failed; satisfied rate "
            "66.7% of the 3 decided, 2 unfinished") in capsys.readouterr().out
    [group] = md_table((tmp_path / "report.md").read_text(), "## By configuration")
    assert (group["satisfied"], group["satisfied@1"], group["outside the rates"]) == ("2/3 (66.7%)", "66.7%", "not_run 2")


def test_crashed_runs_are_outside_every_rate_and_fail_the_gate(tmp_path, capsys):
    """Issue 44, case 5: a crash (error, grader_error) read as an unsatisfied run, ``satisfied rate 40.0%``;
    it says nothing of the task: outside the rates, counted beside them, yet no crash passes fail_under."""
    statuses = [Status.SATISFIED, Status.SATISFIED, Status.FAILED, Status.ERROR, Status.GRADER_ERROR]
    record = write_task_job(tmp_path, statuses, CONFIG)
    assert (record.aggregate.decided, record.aggregate.satisfied_rate) == (3, 0.6667)
    assert run_command(["report", str(tmp_path), "--fail-under", "0.5"]) == 4
    assert ("report: 5 runs in 1 job: 2 satisfied, 1 failed, 1 error, 1 grader_error; satisfied rate 66.7% of the 3 "
            "decided, 2 crashed (fail_under 50.0%; over every run and job not started: 40.0%) -> exit 4") in capsys.readouterr().out
    [group] = md_table((tmp_path / "report.md").read_text(), "## By configuration")
    assert (group["outside the rates"], group["satisfied"], group["satisfied@1"]) == ("error 1, grader_error 1", "2/3 (66.7%)", "66.7%")
    [row] = [json.loads(line) for line in (tmp_path / "summary.jsonl").read_text().splitlines()]
    assert (row["finished"], row["crashed"], row["satisfied"], row["satisfied_rate"]) == (5, 2, 2, 0.666667)


def test_on_the_verdicts_a_crashed_run_is_no_failure_of_its_arm(tmp_path):
    """Issue 44, case 5: "Does the loop help?" without hidden checks read a crashed run as a failed one
    (final passed 2/3); it is in no pass rate (2/2)."""
    write_task_job(tmp_path / "0", [Status.SATISFIED, Status.SATISFIED, Status.ERROR], {**CONFIG, "loop": {"arm": "rubric"}},
                   ("loop.arm=rubric",))
    write_task_job(tmp_path / "1", [Status.SATISFIED, Status.FAILED, Status.FAILED], {**CONFIG, "loop": {"arm": "single"}},
                   ("loop.arm=single",))
    arms = {row["arm"]: row for row in md_table(_report(tmp_path), "## Does the loop help?")}
    assert arms["rubric"]["final passed"].startswith("2/2 (100.0%") and arms["single"]["final passed"].startswith("1/3 (33.3%")


def test_a_failed_shard_is_a_job_that_did_not_start_not_a_task(tmp_path):
    """Finding 9: tasks 6, pass@k 3/6 where it should read 3/5, the failed job apart."""
    from rubric_runner.records import ErrorInfo, RunRecord

    write_task_job(tmp_path / "0", [Status.SATISFIED] * 3 + [Status.FAILED] * 2, CONFIG)
    failed = RunRecord(run_dir=str(tmp_path / "1"), status=Status.ERROR, exit_code=3,
                       error=ErrorInfo(type="UsageError", message="rubric.tasks: [9:12] selects none of the dataset's 5 tasks"))
    failed.header.config, failed.header.sources.overrides = _config(rubric={"tasks": ["9:12"]}), ["rubric.tasks=[9:12]"]
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "result.json").write_text(failed.model_dump_json())
    text = _report(tmp_path)
    [group] = md_table(text, "## By configuration")
    assert (group["tasks"], group["runs"], group["satisfied"], group["satisfied@k"]) == ("5", "5", "3/5 (60.0%)", "60.0%")
    assert "partial: 5 of 5 runs finished, 1 job not started; 5 runs in 2 jobs" in text
    [job] = md_table(text, "## Jobs that did not start")
    assert (job["job"], job["error"]) == ("1", "UsageError: rubric.tasks: [9:12] selects none of the dataset's 5 tasks")
    assert [r["job"] for r in md_table(text, "## Runs")] == ["0"] * 5


def test_a_jobs_iterations_are_a_mean_per_run(tmp_path):
    """Finding 10: a multi-task job's ``iterations`` was a sum ("satisfied after 51 grading passes")."""
    write_task_job(tmp_path, [Status.SATISFIED] * 4, CONFIG, iterations=[1, 2, 2, 1])
    _report(tmp_path)
    [row] = [json.loads(line) for line in (tmp_path / "summary.jsonl").read_text().splitlines()]
    assert row["mean_passes_per_run"] == 1.5 and "iterations" not in row
    assert [json.loads(line)["iterations"] for line in (tmp_path / "summary_tasks.jsonl").read_text().splitlines()] == [1, 2, 2, 1]
