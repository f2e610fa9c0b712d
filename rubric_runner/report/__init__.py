"""Reports of runs: summary files, report.md and report.html, and the ``report`` command."""

from __future__ import annotations

from pathlib import Path

from ..records import Job
from .prices import PRICES_FILE, PriceError, load_prices
from .summary import SUMMARY_CSV, SUMMARY_JSONL, summary_row, verdict_line, write_summary

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def write_reports(root: Path, jobs: list[Job], prices_path: str | Path | None = None) -> list[Path]:
    """report.md and report.html in ``root``; returns their paths."""
    from .render import render

    prices = load_prices(prices_path)
    paths = [root / REPORT_MD, root / REPORT_HTML]
    for path in paths:
        path.write_text(render(path.name, root, jobs, prices), encoding="utf-8")
    return paths


def write_all(root: Path, jobs: list[Job], prices: str | Path | None = None) -> list[Path]:
    """The summary files and both reports in ``root``; returns the paths written."""
    return [*write_summary(root, jobs), *write_reports(root, jobs, prices)]


__all__ = [
    "PRICES_FILE", "REPORT_HTML", "REPORT_MD", "SUMMARY_CSV", "SUMMARY_JSONL", "PriceError", "load_prices",
    "summary_row", "verdict_line", "write_all", "write_reports", "write_summary",
]
