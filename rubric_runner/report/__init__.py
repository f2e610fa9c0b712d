"""Reports of runs: summary files, report.md and report.html, and the ``report`` command.

A multi-task job counts as its runs (tasks x repeats): ``expand`` makes them, once, and everything
here counts them; ``done`` says how much of them finished, and every output says it when not all did.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config.prices import PRICES_FILE, PriceError, load_prices
from ..records import Job, write_atomic
from ..records.store import gc_paused
from .columns import ranking_lines
from .partial import Completion, completion, planned_jobs_in, progress_line
from .runs import Run, expand
from .summary import (
    SUMMARY_CSV,
    SUMMARY_JSONL,
    TASKS_CSV,
    TASKS_JSONL,
    gate_statuses,
    verdict_line,
    write_summary,
)

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


@dataclass(frozen=True)
class Live:
    """The runs are still going: how many jobs and runs there will be, where known."""

    jobs: int | None = None
    runs: int | None = None


def done(root: Path, jobs: list[Job], runs: list[Run], live: Live | None = None) -> Completion:
    """How much of the runs under ``root`` finished: of the runs there will be, when ``live`` knows,
    and of the jobs the sweep planned (``live``'s count, else its ``multirun.yaml``)."""
    jobs_total = live.jobs if live is not None and live.jobs else planned_jobs_in(root)
    return completion(jobs, runs, jobs_total, live.runs if live is not None else None, live is not None)


def write_reports(root: Path, jobs: list[Job], runs: list[Run], prices_path: str | Path | None = None,
                  progress: str | None = None, finished: Completion | None = None) -> list[Path]:
    """report.md and report.html in ``root``; returns their paths."""
    from .render import render

    prices = load_prices(prices_path)
    finished = done(root, jobs, runs) if finished is None else finished
    paths = [root / REPORT_MD, root / REPORT_HTML]
    for path, stream in zip(paths, render([path.name for path in paths], root, jobs, runs, prices, progress, finished)):
        write_atomic(path, stream)
    return paths


@gc_paused()
def write_all(root: Path, jobs: list[Job], runs: list[Run] | None = None, prices: str | Path | None = None,
              live: Live | None = None) -> list[Path]:
    """The summary files and both reports in ``root`` (``runs``: ``expand(jobs)``); with ``live``,
    marked as in progress. Returns the paths written."""
    runs = expand(jobs, live=live is not None) if runs is None else runs
    progress = progress_line(jobs, runs, live.jobs, live.runs) if live else None
    finished = done(root, jobs, runs, live)
    return [*write_summary(root, jobs, runs, prices, finished), *write_reports(root, jobs, runs, prices, progress, finished)]


__all__ = [
    "PRICES_FILE", "REPORT_HTML", "REPORT_MD", "SUMMARY_CSV", "SUMMARY_JSONL", "TASKS_CSV", "TASKS_JSONL", "Live",
    "PriceError", "Run", "done", "expand", "gate_statuses", "load_prices", "ranking_lines", "verdict_line", "write_all",
    "write_reports", "write_summary",
]
