"""The reports' tables, declared once: each column's header, its text, its HTML cell and sort key.

``report.md`` shows a column's ``text``; ``report.html`` shows ``html`` (or ``text``), escaped, or
the template's cell named by ``cell`` (a status badge, links, a verdict trail), and sorts by ``sort``
(a number right-aligns the cell). ``md`` and ``web`` say which report has the column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..records import Job, LimitHit
from .summary import summary_row


def fmt_rate(part: int, whole: int) -> str:
    """``3/4 (75.0%)``."""
    return f"{part}/{whole} ({part / whole:.1%})" if whole else "-"


def fmt_num(value: float | None, digits: int = 2) -> str:
    """A number, or ``n/a``."""
    return "n/a" if value is None else f"{value:,.{digits}f}"


def fmt_iterations(distribution: dict[int, int]) -> str:
    """``1 pass: 3, 2 passes: 1``: satisfied runs by the iterations they took."""
    return ", ".join(f"{k} pass{'' if k == 1 else 'es'}: {n}" for k, n in distribution.items()) or "-"


def fmt_counts(counts: dict[Any, int]) -> str:
    """``satisfied 3, failed 1``."""
    return ", ".join(f"{key} {n}" for key, n in counts.items()) or "-"


def fmt_limit(hit: LimitHit | None) -> str:
    """``limits.worker_calls 50/50``: the limit or budget that stopped a run, and the figure reached."""
    return f"{hit.name} {hit.value:g}/{hit.limit:g}" if hit else ""


def _or(value: float | None, missing: float) -> float:
    return missing if value is None else value


@dataclass(frozen=True)
class Column:
    """One column of a report table; each function takes the table's row."""

    header: str
    text: Callable[[Any], Any] = lambda row: ""
    sort: Callable[[Any], Any] | None = None
    html: Callable[[Any], Any] | None = None
    cell: str | None = None
    md: bool = True
    web: bool = True

    def html_text(self, row: Any) -> Any:
        """What the HTML cell shows (the template escapes it)."""
        return (self.html or self.text)(row)

    def sort_key(self, row: Any) -> Any:
        """The HTML cell's sort key, or None."""
        return self.sort(row) if self.sort else None


GROUP_COLUMNS = (
    Column("worker", lambda g: g["worker"]),
    Column("grader", lambda g: g["grader"]),
    Column("rubric", lambda g: g["rubric"]),
    Column("runs", lambda g: g["runs"], sort=lambda g: g["runs"]),
    Column("satisfied", lambda g: fmt_rate(g["satisfied"], g["runs"]), sort=lambda g: g["satisfied_rate"]),
    Column("mean iterations to satisfy", lambda g: fmt_num(g["mean_iterations"]), sort=lambda g: _or(g["mean_iterations"], -1)),
    Column("runs by iterations to satisfy", lambda g: fmt_iterations(g["iterations"])),
    Column("statuses", lambda g: fmt_counts(g["outcomes"])),
    Column("grading verdicts", lambda g: fmt_counts(g["verdicts"])),
    Column("worker tokens/run", lambda g: fmt_num(g["tokens_per_run"]["worker"], 0), sort=lambda g: g["tokens_per_run"]["worker"]),
    Column("grader tokens/run", lambda g: fmt_num(g["tokens_per_run"]["grader"], 0), sort=lambda g: g["tokens_per_run"]["grader"]),
    Column("est. USD/run", lambda g: fmt_num(g["cost_per_run"], 4), sort=lambda g: _or(g["cost_per_run"], -1)),
    Column("est. USD", lambda g: fmt_num(g["cost"], 4), sort=lambda g: _or(g["cost"], -1)),
    Column("wall s/run", lambda g: fmt_num(g["wall_per_run"]), sort=lambda g: g["wall_per_run"]),
    Column("runs", cell="links", md=False),
)
"""The groups table: one row per (worker, grader, rubric), a ``stats.by_group`` entry with ``links``."""


@dataclass(frozen=True)
class RunRow:
    """A run as the runs table shows it."""

    index: int
    job: Job
    row: dict[str, Any]
    cost: float | None


def run_rows(jobs: list[Job], cost: Callable[[Job], float | None]) -> list[RunRow]:
    """The runs table's rows, in job order."""
    return [RunRow(index, job, summary_row(job), cost(job)) for index, job in enumerate(jobs)]


RUN_COLUMNS = (
    Column("job", lambda r: r.row["job"]),
    Column("worker", lambda r: r.row["worker"]),
    Column("grader", lambda r: r.row["grader"]),
    Column("rubric", lambda r: r.row["rubric"]),
    Column("status", lambda r: r.row["status"], sort=lambda r: r.row["status"], cell="status"),
    Column("iterations", lambda r: r.row["iterations"], sort=lambda r: r.row["iterations"]),
    Column("worker tokens", lambda r: r.row["worker_tokens"], sort=lambda r: r.row["worker_tokens"],
           html=lambda r: f"{r.row['worker_tokens']:,}"),
    Column("grader tokens", lambda r: r.row["grader_tokens"], sort=lambda r: r.row["grader_tokens"],
           html=lambda r: f"{r.row['grader_tokens']:,}"),
    Column("est. USD", lambda r: fmt_num(r.cost, 4), sort=lambda r: _or(r.cost, -1)),
    Column("wall s", lambda r: fmt_num(r.row["wall_seconds"]), sort=lambda r: r.row["wall_seconds"] or 0),
    Column("stopped by", lambda r: fmt_limit(r.job.record.limit)),
    Column("error", lambda r: r.row["error"] or "", web=False),
    Column("verdict trail", cell="trail", md=False),
)
"""The runs table: one row per run (a ``RunRow``)."""

CRITERIA_COLUMNS = (
    Column("criterion", lambda c: c["name"]),
    Column("first pass", lambda c: fmt_rate(*c["first"]), sort=lambda c: c["first"][0] / c["first"][1]),
    Column("final pass", lambda c: fmt_rate(*c["final"]), sort=lambda c: c["final"][0] / c["final"][1]),
)
"""A group's criteria table: one row per criterion name."""
