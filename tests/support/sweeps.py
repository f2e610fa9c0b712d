"""A six-job sweep with scripted models, shared by the sweep and report tests; a workspace task set swept on
each launcher, and what its jobs' records say of their tasks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rubric_runner.loop.workspaces import kept_seed
from rubric_runner.paths import DATA_DIR
from support.helpers import SCRIPTED_EVIDENCE, run_cli, verdict, write_script

A, B = "Has a title", "Cites a source"
SCRIPTED = ("worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE)
STATUSES = ["satisfied", "satisfied", "satisfied", "error", "max_iterations_reached", "max_iterations_reached"]
PRICES = {"scripted:alpha": (100, 400), "scripted:beta": (200, 800), "demo": (50, 100)}
"""USD per 1M input/output tokens; ``demo`` (a bare model id) prices the grader ``scripted:demo``."""


def write_scripts(folder: Path) -> tuple[Path, Path, Path]:
    """good: satisfied at once; revise: satisfied on the second pass; stuck: never satisfied."""
    folder.mkdir(exist_ok=True)
    good = write_script(folder / "good.yaml", [{"content": "final"}], [verdict("satisfied", (A, True), (B, True))])
    revise = write_script(
        folder / "revise.yaml",
        [{"content": "draft"}, {"content": "final"}],
        [verdict("needs_revision", (A, True), (B, False)), verdict("satisfied", (A, True), (B, True))],
    )
    stuck = write_script(
        folder / "stuck.yaml",
        [{"content": "draft 1"}, {"content": "draft 2"}],
        [verdict("needs_revision", (A, False), (B, False))] * 2,
    )
    return good, revise, stuck


def run_six_job_sweep(tmp: Path, *extra: str):
    """Basic launcher: scripts good/revise/stuck x workers alpha/beta (jobs 0-5), priced by ``tmp/prices.yaml``
    (``PRICES``); job 3 crashes.

    Job 3's run dir already holds a directory named events.jsonl, so the job function raises
    before run() can record anything, and Hydra's sweeper re-raises that after the batch.
    Returns (completed process, sweep dir); the statuses are ``STATUSES``.
    """
    good, revise, stuck = write_scripts(tmp / "scripts")
    prices = tmp / "prices.yaml"
    prices.write_text("".join(f"{model}: {{input: {i}, output: {o}}}\n" for model, (i, o) in PRICES.items()))
    sweep_dir = tmp / "sweep"
    (sweep_dir / "3" / "events.jsonl").mkdir(parents=True)
    proc = run_cli(
        "-m", *SCRIPTED, f"worker.script={good},{revise},{stuck}", "grader.script=${worker.script}",
        "worker.model=scripted:alpha,scripted:beta", "grader.max_iterations=2", f"sweep.prices={prices}", *extra,
        f"hydra.sweep.dir={sweep_dir}", cwd=tmp,
    )
    return proc, sweep_dir


def read_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """The rows of the sweep's summary.jsonl."""
    return [json.loads(line) for line in (sweep_dir / "summary.jsonl").read_text().splitlines()]


WORKSPACE_TASKS = ("fix_median", "protected_test")
"""Two bundled repo tasks: a first fix that fails its hidden tests, and a first attempt that tampers with a protected test."""
WORKSPACE_RUN = ("worker=scripted", "grader=scripted", "run.console=false", "rubric=repo_tasks",
                 f"rubric.tasks=[{','.join(WORKSPACE_TASKS)}]")
BUNDLED_TASKS = "${package_data:datasets/repo_tasks.jsonl}"
USER_TASKS = "data/datasets/repo_tasks.jsonl"
"""The same task set as a user's: a dataset named relative to the shell's dir, its rows' repos and hidden tests
relative to it (``user_task_set``)."""


def workspace_sweep(*launcher: str) -> tuple[str, ...]:
    """The overrides of a two-job sweep of ``WORKSPACE_RUN`` (two repeats): the bundled task set, and the user's
    copy of it."""
    return ("-m", *launcher, *WORKSPACE_RUN, "run.repeats=2", f"rubric.dataset={BUNDLED_TASKS},{USER_TASKS}")


def user_task_set(folder: Path) -> None:
    """Copy the bundled datasets, repos and hidden tests under ``folder/data`` (``USER_TASKS``)."""
    for name in ("datasets", "repos", "hidden"):
        shutil.copytree(DATA_DIR / name, folder / "data" / name)


def workspace_outcomes(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each task x repeat of a workspace run (``fix_median-r0``) as its records tell it: status; each attempt's
    changed and tampered paths and its kept diff, then the final one's; each judged attempt's hidden checks and
    the final answer's; and the task's seed, read from the run dir."""
    found = {}
    for task_dir in sorted((run_dir / "tasks").iterdir()):
        record = json.loads((task_dir / "result.json").read_text())
        kept = [*record["workspaces"], record["final_workspace"]]
        found[task_dir.name] = {
            "status": record["status"],
            "workspaces": [(w["attempt"], w["changed"], w.get("tampered"), (task_dir / w["diff"]).read_text()) for w in kept],
            "hidden": [(a["attempt"], [(c["tool"], c["outcome"]) for c in a["verification"]["checks"]])
                       for a in record["verified_attempts"]],
            "final_hidden": record["verification"]["final"]["outcome"],
            "seed": kept_seed(run_dir, record["workspace_seed"], record["task_id"]),
        }
    return found


def check_workspace_sweep(sweep_dir: Path, local: Path) -> None:
    """Each job of ``workspace_sweep`` tells the story of the ``local`` run for each task and repeat (the same
    outcomes, diffs, hidden checks and seed), from the package's task set and from the user's; the sweep's summaries
    and reports say so."""
    rows = read_rows(sweep_dir)
    assert [(row["job"], row["status"], row["runs"]) for row in rows] == [("0", "satisfied", 4), ("1", "satisfied", 4)]
    told = workspace_outcomes(local)
    expected = {f"{task}-r{repeat}": told[f"{task}-r0"] for task in WORKSPACE_TASKS for repeat in (0, 1)}
    for row, dataset in zip(rows, (str(DATA_DIR / "datasets" / "repo_tasks.jsonl"), USER_TASKS), strict=True):
        job_dir = sweep_dir / row["job"]
        assert workspace_outcomes(job_dir) == expected, row["job"]
        header = json.loads((job_dir / "result.json").read_text())["header"]
        assert header["config"]["rubric"]["dataset"] == dataset  # the bundled one: the package data of this checkout
    fields = ("task_id", "status", "iterations", "verified_first", "verified_final")
    runs = [{key: line[key] for key in fields} for line in _lines(local / "summary_tasks.jsonl")]
    each_job = [run for run in runs for _ in (0, 1)]  # repeats 0 and 1 of each task
    assert [{key: line[key] for key in fields} for line in _lines(sweep_dir / "summary_tasks.jsonl")] == each_job * len(rows)
    report = (sweep_dir / "report.md").read_text()
    assert [line for line in report.splitlines() if line.startswith("### job ")] == [
        f"### job {row['job']}: {task} (repeat {repeat})" for row in rows for task in WORKSPACE_TASKS for repeat in (0, 1)]
    assert report.count("; **tampered**: /tests/test_slug.py") == 4  # protected_test's first attempt, in each run
    assert (sweep_dir / "report.html").is_file()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
