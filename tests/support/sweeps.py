"""A six-job sweep with scripted models, shared by the sweep and report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
