"""The reports' tables, declared once: each column's header, its text, its HTML cell and sort key.

``report.md`` shows a column's ``text``; ``report.html`` shows ``html`` (or ``text``), escaped, as a
badge or a link, or the ``markup`` it draws itself (a verdict trail), and sorts by ``sort`` (a number
right-aligns the cell). ``md`` and ``web`` say which report has the column. A column added to a
table here shows in both reports; a new table is a ``Table`` in ``render.tables`` and a line in each
template.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape

from ..analysis.judge import Judgement, Rate, grader_label, judge_groups, ranked
from ..records import LimitHit, Outcome, Status
from .runs import Run


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
    """One column of a report table; each function takes the table's row.

    ``badge`` (a CSS class: satisfied, partial, unsatisfied, error, running) shows the HTML cell as a
    badge; ``link`` makes it a link (say, to the runs table filtered: ``#runs?group=2&task=t3``);
    ``markup`` draws the HTML cell itself (already escaped); ``tasks_only`` columns show only when
    some run is a task of a task set, or the runs have different tasks.
    """

    header: str
    text: Callable[[Any], Any] = lambda row: ""
    sort: Callable[[Any], Any] | None = None
    html: Callable[[Any], Any] | None = None
    badge: Callable[[Any], str | None] | None = None
    link: Callable[[Any], str | None] | None = None
    markup: Callable[[Any], str] | None = None
    md: bool = True
    web: bool = True
    tasks_only: bool = False

    def md_cell(self, row: Any) -> str:
        """The Markdown cell: no pipe or newline breaks the row."""
        return str(self.text(row)).replace("|", "\\|").replace("\n", " ")

    def html_cell(self, row: Any) -> str:
        """The HTML ``<td>``: escaped text, as a badge or a link, a sort key (a number right-aligns it)."""
        if self.markup is not None:
            content = self.markup(row)
        else:
            content = _escape((self.html or self.text)(row))
            if self.badge is not None and (badge := self.badge(row)):
                content = f'<span class="status {badge}">{content}</span>'
            if self.link is not None and (link := self.link(row)):
                content = f'<a href="{_escape(link)}">{content}</a>'
        sort = None if self.sort is None else self.sort(row)
        if sort is None:
            return f"<td>{content}</td>"
        if isinstance(sort, (int, float)):
            return f'<td class="num" data-sort="{sort}">{content}</td>'
        return f'<td data-sort="{_escape(sort)}">{content}</td>'


_HTML_SPECIAL = re.compile(r"[&<>'\"]")
"""What ``escape`` replaces: a text without any of these is its own escape."""


def _escape(value: Any) -> str:
    """``escape(value)``, without its cost where there is nothing to escape (most of a big table's cells)."""
    if type(value) is int:
        return str(value)
    text = value if isinstance(value, str) else str(value)
    return escape(value) if _HTML_SPECIAL.search(text) else text


@dataclass(frozen=True)
class Table:
    """A table of a report: its ``id`` (the HTML element's, and the hash of a filtered link:
    ``#runs?status=failed``), columns and rows; ``filters`` gives a row's values for the table's
    filters (say ``group``, ``status``, ``task``), and a ``paged`` table shows a page of rows at a time,
    with those filters and a text search.

    The rows are drawn here rather than in the templates: a report of 10,000 runs has 150,000 cells.
    """

    id: str
    columns: tuple[Column, ...]
    rows: list[Any]
    filters: Callable[[Any], dict[str, Any]] = lambda row: {}
    options: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    """Per filter: the (value, label) choices of its menu, or none for a box that takes a value as typed."""
    paged: bool = False

    def md_columns(self) -> list[Column]:
        """The columns report.md shows."""
        return [c for c in self.columns if c.md]

    def web_columns(self) -> list[Column]:
        """The columns report.html shows."""
        return [c for c in self.columns if c.web]

    def md_rows(self) -> Iterator[str]:
        """The Markdown table's rows, a line each, drawn as they are written."""
        columns = self.md_columns()
        for row in self.rows:
            yield "| " + " | ".join([c.md_cell(row) for c in columns]) + " |\n"

    def html_rows(self) -> Iterator[Markup]:
        """The HTML table's ``<tr>`` elements, a line each, drawn as they are written; each has its
        filters' values as ``data-*`` attributes."""
        columns = self.web_columns()
        separator = ""
        for row in self.rows:
            data = "".join([f' data-{key}="{_escape(value)}"' for key, value in self.filters(row).items()])
            yield Markup(f"{separator}<tr{data}>{''.join([c.html_cell(row) for c in columns])}</tr>")
            separator = "\n"


def filtered(**values: Any) -> str:
    """A link to the runs table with its filters set."""
    return "#runs?" + urlencode({key: value for key, value in values.items() if value is not None})


def outcome(status: str | None) -> str:
    """The CSS class of a status or verdict: satisfied, unsatisfied, error or running."""
    if status == Status.RUNNING:
        return "running"
    return Status(status).outcome if status in Status._value2member_map_ else Outcome.ERROR


GROUP_COLUMNS = (
    Column("worker", lambda g: g["worker"]),
    Column("grader", lambda g: g["grader"]),
    Column("rubric", lambda g: g["rubric"]),
    Column("tasks", lambda g: g["tasks"], sort=lambda g: g["tasks"]),
    Column("runs", lambda g: g["runs"], sort=lambda g: g["runs"]),
    Column("satisfied", lambda g: fmt_rate(g["satisfied"], g["runs"]), sort=lambda g: g["satisfied_rate"]),
    Column("pass@k", lambda g: fmt_rate(g["pass_at_k"], g["tasks"]), sort=lambda g: g["pass_at_k"] / g["tasks"]),
    Column("pass^k", lambda g: fmt_rate(g["pass_hat_k"], g["tasks"]), sort=lambda g: g["pass_hat_k"] / g["tasks"]),
    Column("k", lambda g: g["k"]),
    Column("mean iterations to satisfy", lambda g: fmt_num(g["mean_iterations"]), sort=lambda g: _or(g["mean_iterations"], -1)),
    Column("runs by iterations to satisfy", lambda g: fmt_iterations(g["iterations"])),
    Column("statuses", lambda g: fmt_counts(g["outcomes"])),
    Column("grading verdicts", lambda g: fmt_counts(g["verdicts"])),
    Column("worker tokens/run", lambda g: fmt_num(g["tokens_per_run"]["worker"], 0), sort=lambda g: g["tokens_per_run"]["worker"]),
    Column("grader tokens/run", lambda g: fmt_num(g["tokens_per_run"]["grader"], 0), sort=lambda g: g["tokens_per_run"]["grader"]),
    Column("est. USD/run", lambda g: fmt_num(g["cost_per_run"], 4), sort=lambda g: _or(g["cost_per_run"], -1)),
    Column("est. USD", lambda g: fmt_num(g["cost"], 4), sort=lambda g: _or(g["cost"], -1)),
    Column("wall s/run", lambda g: fmt_num(g["wall_per_run"]), sort=lambda g: g["wall_per_run"]),
    Column("", lambda g: f"{g['runs']} run{'' if g['runs'] == 1 else 's'}", link=lambda g: filtered(group=g["group"]), md=False),
)
"""The groups table: one row per (worker, grader, rubric), a ``stats.by_group`` entry; a run is a task x repeat."""


@dataclass(frozen=True)
class RunRow:
    """A run as the runs table shows it."""

    run: Run
    cost: float | None
    group: int

    @property
    def index(self) -> int:
        """The run's number: ``report.html#run-3`` opens run 3's trail."""
        return self.run.index


def run_rows(runs: list[Run], groups: list[dict[str, Any]], prices: dict[str, dict[str, float]]) -> list[RunRow]:
    """The runs table's rows, in job and task order."""
    number = {(g["worker"], g["grader"], g["rubric"]): g["group"] for g in groups}
    return [RunRow(run, run.cost(prices), number[run.group]) for run in runs]


RUN_COLUMNS = (
    Column("job", lambda r: r.run.job.job),
    Column("task", lambda r: r.run.task, tasks_only=True),
    Column("repeat", lambda r: "-" if r.run.repeat is None else r.run.repeat, sort=lambda r: _or(r.run.repeat, -1), tasks_only=True),
    Column("worker", lambda r: r.run.worker),
    Column("grader", lambda r: r.run.grader),
    Column("rubric", lambda r: r.run.rubric),
    Column("status", lambda r: r.run.status.value, sort=lambda r: r.run.status.value, badge=lambda r: outcome(r.run.status.value)),
    Column("iterations", lambda r: r.run.iterations, sort=lambda r: r.run.iterations),
    Column("worker tokens", lambda r: r.run.worker_tokens, sort=lambda r: r.run.worker_tokens,
           html=lambda r: f"{r.run.worker_tokens:,}"),
    Column("grader tokens", lambda r: r.run.grader_tokens, sort=lambda r: r.run.grader_tokens,
           html=lambda r: f"{r.run.grader_tokens:,}"),
    Column("est. USD", lambda r: fmt_num(r.cost, 4), sort=lambda r: _or(r.cost, -1)),
    Column("wall s", lambda r: fmt_num(r.run.wall_seconds), sort=lambda r: r.run.wall_seconds or 0),
    Column("stopped by", lambda r: fmt_limit(r.run.limit)),
    Column("error", lambda r: r.run.error, web=False),
    Column("verdict trail", markup=lambda r: trail_cell(r.index, len(r.run.verdicts)), md=False),
)
"""The runs table: one row per run (a ``RunRow``)."""


def trail_cell(index: int, passes: int) -> str:
    """A run's trail, closed: the page draws it from its JSON when opened (``#run-3`` opens run 3's)."""
    summary = f"{passes} grading pass{'' if passes == 1 else 'es'}" if passes else "no grading pass"
    return f'<details id="run-{index}" data-run="{index}"><summary>{summary}</summary></details>'


def run_filters(row: RunRow) -> dict[str, Any]:
    """What the runs table's filters match: the run's group, status and task."""
    return {"group": row.group, "status": row.run.status.value, "task": row.run.task}


CRITERIA_COLUMNS = (
    Column("criterion", lambda c: c["name"]),
    Column("first pass", lambda c: fmt_rate(*c["first"]), sort=lambda c: c["first"][0] / c["first"][1]),
    Column("final pass", lambda c: fmt_rate(*c["final"]), sort=lambda c: c["final"][0] / c["final"][1]),
)
"""A group's criteria table: one row per criterion name."""


def _matrix_badge(cell: dict[str, Any] | None) -> str | None:
    if cell is None:
        return None
    if cell["satisfied"] == cell["runs"]:
        return Outcome.SATISFIED
    return "partial" if cell["satisfied"] else outcome(cell["worst"])


def matrix_columns(models: list[str]) -> tuple[Column, ...]:
    """The task x model matrix's columns: the task, one per model (satisfied of its runs), and which models missed it."""

    def model(i: int) -> Column:
        def cell(row: dict[str, Any]) -> dict[str, Any] | None:
            return row["cells"][i]

        return Column(
            models[i], lambda row: fmt_share(cell(row)), sort=lambda row: cell(row)["satisfied"] / cell(row)["runs"] if cell(row) else -1,
            badge=lambda row: _matrix_badge(cell(row)),
            link=lambda row: filtered(group=cell(row)["group"], task=row["task"]) if cell(row) else None,
        )

    return (
        Column("rubric", lambda row: row["rubric"]),
        Column("task", lambda row: row["task"]),
        *(model(i) for i in range(len(models))),
        Column("missed by", lambda row: ", ".join(row["missed_by"]) or "-"),
    )


def fmt_share(cell: dict[str, Any] | None) -> str:
    """``2/3``: satisfied runs of a task by a model (``1/3, 2 undone``: two not finished, see
    ``stats.UNDONE``), or ``-`` where it has no run."""
    if not cell:
        return "-"
    return f"{cell['satisfied']}/{cell['runs']}" + (f", {cell['undone']} undone" if cell["undone"] else "")


def fmt_lift(judgement: Judgement) -> str:
    """``+20.0 pts (fixed 1, broken 0)``: the final pass rate minus the first, in percentage points."""
    return f"{100 * judgement.lift:+.1f} pts (fixed {judgement.fixed}, broken {judgement.broken})"


def _count(header: str, count: Callable[[Judgement], int]) -> Column:
    return Column(header, lambda row: count(row["judgement"]), sort=lambda row: count(row["judgement"]))


def _rate(header: str, rate: Callable[[Judgement], Rate]) -> Column:
    return Column(header, lambda row: str(rate(row["judgement"])), sort=lambda row: _or(rate(row["judgement"]).value, -1))


JUDGEMENT_COLUMNS = (
    _count("verified", lambda j: j.runs),
    _count("satisfied & passed", lambda j: j.satisfied_passed),
    _count("satisfied & failed", lambda j: j.satisfied_failed),
    _count("rejected & passed", lambda j: j.rejected_passed),
    _count("rejected & failed", lambda j: j.rejected_failed),
    _count("unverifiable", lambda j: j.unverifiable),
    _rate("false satisfied", lambda j: j.false_satisfied),
    _rate("false rejection", lambda j: j.false_rejection),
    _rate("error", lambda j: j.error),
    _rate("first pass", lambda j: j.first),
    _rate("final pass", lambda j: j.final),
    Column("lift", lambda row: fmt_lift(row["judgement"]), sort=lambda row: row["judgement"].lift),
    Column("tokens/verified success", lambda row: fmt_num(row["judgement"].tokens_per_success, 0),
           sort=lambda row: _or(row["judgement"].tokens_per_success, -1)),
    Column("est. USD/verified success", lambda row: fmt_num(row["judgement"].cost_per_success, 4),
           sort=lambda row: _or(row["judgement"].cost_per_success, -1)),
)
"""A judgement's columns (``judge.Judgement``, a row's ``judgement``): the confusion matrix, the rates
with their counts and Wilson intervals, the lift, the spend per verified success."""

JUDGE_COLUMNS = (
    Column("worker", lambda row: row["worker"]),
    Column("grader", lambda row: row["grader"]),
    Column("rubric", lambda row: row["rubric"]),
    *JUDGEMENT_COLUMNS,
)
"""The judges table: one row per (worker, grader, rubric) with a verified run."""

GRADER_COLUMNS = (
    Column("rank", lambda row: row["rank"], sort=lambda row: row["rank"]),
    Column("grader", lambda row: row["grader"]),
    Column("workers", lambda row: row["workers"]),
    *JUDGEMENT_COLUMNS,
)
"""The graders table: one row per grader across workers and rubrics, fewest errors first (``judge.ranked``)."""


def judge_rows(runs: list[Run], prices: dict[str, dict[str, float]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The judges table's rows and the graders table's; none when no run was verified. A grader is a
    ``judge.grader_key``: graders of one model in a regrade stay apart."""
    if all(run.verified_outcome is None for run in runs):
        return [], []

    def key(run: Run) -> tuple[str, tuple[str, str], str]:
        worker, _, rubric = run.group
        return worker, run.grader_key, rubric

    judged = judge_groups(runs, key, prices, Run.judged)
    judges = [{"worker": worker, "grader": grader_label(grader), "rubric": rubric, "judgement": judgement}
              for (worker, grader, rubric), judgement in judged.items()]
    graders = [
        {"rank": rank, "grader": grader_label(grader), "judgement": judgement,
         "workers": ", ".join(sorted({worker for worker, of, _ in judged if of == grader}))}
        for rank, (grader, judgement) in enumerate(ranked(judge_groups(runs, lambda run: run.grader_key, prices, Run.judged)), 1)
    ]
    return judges, graders
