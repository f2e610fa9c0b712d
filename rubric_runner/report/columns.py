"""The reports' tables, declared once: each column's header, its text, its HTML cell and sort key.

``report.md`` shows a column's ``text``; ``report.html`` shows ``html`` (or ``text``), escaped, as a
badge or a link, or the ``markup`` it draws itself (a verdict trail), and sorts by ``sort`` (a number
right-aligns the cell). ``md`` and ``web`` say which report has the column. A column added to a
table here shows in both reports; a new table is a ``Table`` in ``render.tables`` and a line in each
template.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape

from ..analysis import loop_value, policies
from ..analysis.agreement import (
    Rating,
    SelfAgreement,
    TwoRaters,
    against_labels,
    cohen,
    people_against_checks,
    self_agreement,
)
from ..analysis.intervals import holm
from ..analysis.judge import (
    VERDICTS,
    Judgement,
    Rate,
    fmt_lift,
    judge_groups,
    ranking,
    ranking_line,
)
from ..analysis.numbers import fmt_num, fmt_p, fmt_pct, fmt_rate, fmt_tokens
from ..analysis.paired import PairedRates, fmt_difference, fmt_test
from ..analysis.views import Window
from ..paths import Resolver
from ..records import CheckOutcome, LimitHit, Outcome, Status
from . import configs
from .runs import Run
from .stats import Cell, Criterion, Group, TaskRow


def fmt_passes_to_satisfied(distribution: dict[int, int]) -> str:
    """``1 pass: 3, 2 passes: 1``: satisfied runs by the grading passes they took."""
    return ", ".join(f"{k} pass{'' if k == 1 else 'es'}: {n}" for k, n in distribution.items()) or "-"


def fmt_counts(counts: dict[Any, int]) -> str:
    """``satisfied 3, failed 1``."""
    return ", ".join(f"{key} {n}" for key, n in counts.items()) or "-"


def fmt_verdicts(group: Group) -> str:
    """``needs_revision 1, satisfied 1; unverified 1; cut view 1/2 (50.0%)``: a group's verdicts, those the
    library marked unverified, and the passes graded on a cut view (of those with a view)."""
    window = group.window
    unverified = f"; unverified {group.unverified}" if group.unverified else ""
    cut = f"; cut view {fmt_rate(window.cut, window.viewed)}" if window.viewed else ""
    return fmt_counts(group.verdicts) + unverified + cut


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


HOLM = "Holm p"
"""The column of a table's p-values adjusted for its tests together (``intervals.holm``)."""


def with_holm(columns: tuple[Column, ...], after: str, rows: list[Any], p: Callable[[Any], float | None]) -> tuple[Column, ...]:
    """``columns`` with, after the column ``after``, each row's p (``p``) adjusted for the table's tests by
    Holm's method; ``columns`` as they are when the table has fewer than two tests."""
    adjusted = dict(zip(map(id, rows), holm([p(row) for row in rows])))
    if sum(value is not None for value in adjusted.values()) < 2:
        return columns
    column = Column(HOLM, lambda row: fmt_p(adjusted[id(row)]), sort=lambda row: _or(adjusted[id(row)], 2))
    at = [c.header for c in columns].index(after) + 1
    return (*columns[:at], column, *columns[at:])


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


@dataclass(frozen=True)
class JudgedRow:
    """A row of a table of judgements: its label, its judgement, and the runs table's filter its links set
    (``filter``: group or grader, ``number``: its number)."""

    label: str
    judgement: Judgement
    filter: str
    number: int


@dataclass(frozen=True)
class ConfigRow(JudgedRow):
    """A row of the judges, answers and views tables: one configuration, and the grader's view of it."""

    window: Window


@dataclass(frozen=True)
class GraderRow(JudgedRow):
    """A row of the graders table: a grader across configurations, ranked (None: not ranked), the workers
    whose transcripts it judged, and which set of transcripts (``A: 12``)."""

    rank: int | None
    workers: str
    transcripts: str


@dataclass(frozen=True)
class ArmRow:
    """A row of the loop's arms table: a configuration and its broken revisions (None without checks)."""

    label: str
    number: int
    arm: loop_value.Arm
    broken: int | None


@dataclass(frozen=True)
class PairRow:
    """A row of the loop's pairs table: the control (``c``'s control) against the rubric loop."""

    rubric: str
    control: str
    c: PairedRates


@dataclass(frozen=True)
class CurveRow:
    """A row of the loop's curve table: one pass of one configuration."""

    label: str
    group: str
    p: loop_value.Point


@dataclass(frozen=True)
class BrokenRow:
    label: str
    b: loop_value.Broken


@dataclass(frozen=True)
class FlipRow:
    label: str
    f: loop_value.Flip


@dataclass(frozen=True)
class PolicyRow:
    label: str
    r: policies.Replayed


@dataclass(frozen=True)
class BesideRow:
    """A policy replayed over a configuration's runs (``label``) beside the real runs of ``real``."""

    label: str
    real: str
    b: policies.Beside


@dataclass(frozen=True)
class PeopleRow:
    """A row of the grader-against-people table: a configuration's verdicts (or people's) against labels
    (or the checks), and per criterion."""

    label: str
    paired: TwoRaters
    judgement: Judgement | None
    criteria: dict[str, TwoRaters]


@dataclass(frozen=True)
class SelfRow:
    label: str
    agreement: SelfAgreement


def filtered(**values: Any) -> str:
    """A link to the runs table with its filters set."""
    return "#runs?" + urlencode({key: value for key, value in values.items() if value is not None})


def outcome(status: str | None) -> str:
    """The CSS class of a status or verdict: satisfied, unsatisfied, error or running."""
    if status == Status.RUNNING:
        return "running"
    known = Status.named(status)
    return known.outcome if known is not None else Outcome.ERROR


def _group_link(**values: Any) -> Callable[[Group], str]:
    return lambda g: filtered(group=g.group, **values)


def _pct(header: str, value: Callable[[Group], float | None]) -> Column:
    return Column(header, lambda g: fmt_pct(value(g)), sort=lambda g: _or(value(g), -1), link=_group_link())


GROUP_COLUMNS = (
    Column("configuration", lambda g: g.label, link=_group_link()),
    Column("worker / grader / rubric", lambda g: f"{g.worker} / {g.grader} / {g.rubric}"),
    Column("tasks", lambda g: g.tasks, sort=lambda g: g.tasks),
    Column("runs", lambda g: g.runs, sort=lambda g: g.runs, link=_group_link()),
    Column("outside the rates", lambda g: fmt_counts(g.outside), sort=lambda g: g.runs - g.decided),
    Column("satisfied", lambda g: fmt_rate(g.satisfied, g.decided), sort=lambda g: _or(g.satisfied_rate, -1),
           link=_group_link(status=Status.SATISFIED.value)),
    _pct("satisfied@1", lambda g: g.satisfied_at_1),
    _pct("satisfied@k", lambda g: g.satisfied_at_k),
    _pct("satisfied^k", lambda g: g.satisfied_hat_k),
    Column("k", lambda g: g.k or "-"),
    Column("mean passes to satisfied", lambda g: fmt_num(g.mean_passes_to_satisfied),
           sort=lambda g: _or(g.mean_passes_to_satisfied, -1)),
    Column("runs by passes to satisfied", lambda g: fmt_passes_to_satisfied(g.passes_to_satisfied)),
    Column("statuses", lambda g: fmt_counts(g.outcomes)),
    Column("grading verdicts", lambda g: fmt_verdicts(g), link=_group_link()),
    Column("worker tokens/run", lambda g: fmt_tokens(g.tokens_per_run["worker"]), sort=lambda g: g.tokens_per_run["worker"]),
    Column("grader tokens/run", lambda g: fmt_tokens(g.tokens_per_run["grader"]), sort=lambda g: g.tokens_per_run["grader"]),
    Column("est. USD/run", lambda g: fmt_num(g.cost_per_run, 4), sort=lambda g: _or(g.cost_per_run, -1)),
    Column("est. USD", lambda g: fmt_num(g.cost, 4), sort=lambda g: _or(g.cost, -1)),
    Column("task s/run", lambda g: fmt_num(g.task_seconds_per_run), sort=lambda g: _or(g.task_seconds_per_run, -1)),
)
"""The groups table: one row per configuration, a ``stats.by_group`` entry; a run is a task x repeat.
The rates count the decided runs; ``outside the rates`` the others (unfinished or crashed), by status."""

JOB_COLUMNS = (
    Column("job", lambda job: job.job),
    Column("status", lambda job: job.record.status.value, badge=lambda job: outcome(job.record.status.value)),
    Column("error", lambda job: f"{job.record.error.type}: {job.record.error.message}" if job.record.error else ""),
    Column("overrides", lambda job: " ".join(job.record.header.sources.overrides)),
)
"""The jobs that did not start: one row per job (a ``records.Job``), with its error; they have no run."""


def fmt_passes(flags: tuple[bool, ...]) -> str:
    """``pass 2, 3``: the grading passes a flag is set on; empty when none."""
    on = [str(k) for k, flag in enumerate(flags, start=1) if flag]
    return f"pass{'es' if len(on) > 1 else ''} {', '.join(on)}" if on else ""


def hidden_check(run: Run) -> str:
    """A run's hidden checks: ``passed``, ``failed``, ``failed → passed`` (first attempt, then final
    answer, where they differ), ``unverifiable``, or ``-`` when not verified."""
    final = run.verified_outcome
    if final is None:
        return "-"
    first = run.first_outcome
    return final.value if first is None or first is final else f"{first.value} → {final.value}"


def matrix_cell(run: Run) -> str:
    """Where a verified run is in its grader's confusion matrix: ``satisfied-passed`` and so on,
    ``outside`` (checked, but no verdict), ``unverifiable``; empty when not verified."""
    final = run.verified_outcome
    if final is None:
        return ""
    if final is CheckOutcome.UNVERIFIABLE:
        return "unverifiable"
    accepted = None if run.unverified and run.unverified[-1] else VERDICTS.get(run.status)
    return "outside" if accepted is None else f"{'satisfied' if accepted else 'rejected'}-{final.value}"


def answer_change(run: Run) -> str:
    """How the loop changed a run's answer against its checks: ``fixed``, ``broken``, ``kept`` (passed
    twice), ``never`` (failed twice); empty when either was not checked."""
    first, final = run.verified_first, run.verified_final
    if first is None or final is None:
        return ""
    return {(False, True): "fixed", (True, False): "broken", (True, True): "kept", (False, False): "never"}[(first, final)]


@dataclass(frozen=True)
class RunRow:
    """A run as the runs table shows it."""

    run: Run
    cost: float | None
    group: int
    label: str
    grader: int

    @property
    def index(self) -> int:
        """The run's number: ``report.html#run-3`` opens run 3's trail."""
        return self.run.index


def run_rows(runs: list[Run], groups: list[Group], graders: dict[str, int],
             prices: dict[str, dict[str, float]]) -> list[RunRow]:
    """The runs table's rows, in job and task order."""
    number = {g.key: (g.group, g.label) for g in groups}
    return [RunRow(run, run.cost(prices), *number[run.group], graders.get(run.grader_key, -1)) for run in runs]


RUN_COLUMNS = (
    Column("job", lambda r: r.run.job.job),
    Column("task", lambda r: r.run.task, tasks_only=True),
    Column("repeat", lambda r: "-" if r.run.repeat is None else r.run.repeat, sort=lambda r: _or(r.run.repeat, -1), tasks_only=True),
    Column("configuration", lambda r: r.label, sort=lambda r: r.group),
    Column("status", lambda r: r.run.status.value, sort=lambda r: r.run.status.value, badge=lambda r: outcome(r.run.status.value)),
    Column("unverified", lambda r: fmt_passes(r.run.unverified), sort=lambda r: sum(r.run.unverified)),
    Column("cut view", lambda r: fmt_passes(tuple(bool(c) for c in r.run.cut)), sort=lambda r: sum(bool(c) for c in r.run.cut)),
    Column("hidden check", lambda r: hidden_check(r.run)),
    Column("iterations", lambda r: r.run.iterations, sort=lambda r: r.run.iterations),
    Column("worker tokens", lambda r: fmt_tokens(r.run.worker_tokens), sort=lambda r: r.run.worker_tokens),
    Column("grader tokens", lambda r: fmt_tokens(r.run.grader_tokens), sort=lambda r: r.run.grader_tokens),
    Column("est. USD", lambda r: fmt_num(r.cost, 4), sort=lambda r: _or(r.cost, -1)),
    Column("task s", lambda r: fmt_num(r.run.wall_seconds), sort=lambda r: r.run.wall_seconds or 0),
    Column("stopped by", lambda r: fmt_limit(r.run.limit)),
    Column("error", lambda r: r.run.error, web=False),
    Column("verdict trail", markup=lambda r: trail_cell(r.index, len(r.run.verdicts)), md=False),
)
"""The runs table: one row per run (a ``RunRow``)."""


def trail_cell(index: int, passes: int) -> str:
    """A run's trail, closed: the page draws it from its JSON when opened (``#run-3`` opens run 3's),
    in a row of its own below the run's."""
    summary = f"{passes} grading pass{'' if passes == 1 else 'es'}" if passes else "no grading pass"
    return f'<details id="run-{index}" data-run="{index}"><summary>{summary}</summary></details>'


def run_filters(row: RunRow) -> dict[str, Any]:
    """What the runs table's filters match: the run's group, grader, status, task, final check, cell
    of its grader's matrix (``wrong``: a verdict the checks contradict) and how the loop changed its
    answer (``changed``: fixed or broken)."""
    run = row.run
    cell, change = matrix_cell(run), answer_change(run)
    return {"group": row.group, "grader": row.grader, "status": run.status.value, "task": run.task,
            "check": run.verified_outcome.value if run.verified_outcome else "none", "cell": cell,
            "wrong": "yes" if cell in ("satisfied-failed", "rejected-passed") else "", "change": change,
            "changed": "yes" if change in ("fixed", "broken") else ""}


def _share(part: int, whole: int) -> float:
    """``part / whole``; -1 when a criterion was not graded at that pass (an under-reporting grader left it out)."""
    return part / whole if whole else -1


def criteria_columns(group: int) -> tuple[Column, ...]:
    """A group's criteria table: one row per criterion name, met on the runs' first and final grading."""
    def link(criterion: Criterion) -> str:
        return filtered(group=group)

    return (
        Column("criterion", lambda c: c.name),
        Column("met at first grading", lambda c: fmt_rate(*c.first), sort=lambda c: _share(*c.first), link=link),
        Column("met at final grading", lambda c: fmt_rate(*c.final), sort=lambda c: _share(*c.final), link=link),
    )


def _matrix_badge(cell: Cell | None) -> str | None:
    if cell is None:
        return None
    if cell.satisfied == cell.runs:
        return Outcome.SATISFIED
    return "partial" if cell.satisfied else outcome(cell.worst)


def matrix_columns(models: list[str]) -> tuple[Column, ...]:
    """The task x configuration matrix's columns: the task, one per configuration (satisfied of its
    runs), and which missed it."""

    def model(i: int) -> Column:
        def cell(row: TaskRow) -> Cell | None:
            return row.cells[i]

        def share(row: TaskRow) -> float:
            found = cell(row)
            return found.satisfied / found.runs if found else -1

        def link(row: TaskRow) -> str | None:
            found = cell(row)
            return filtered(group=found.group, task=row.task) if found else None

        return Column(
            models[i], lambda row: fmt_share(cell(row)), sort=share, badge=lambda row: _matrix_badge(cell(row)), link=link,
        )

    return (
        Column("rubric", lambda row: row.rubric),
        Column("task", lambda row: row.task),
        *(model(i) for i in range(len(models))),
        Column("missed by", lambda row: ", ".join(row.missed_by) or "-"),
    )


def fmt_share(cell: Cell | None) -> str:
    """``2/3``: satisfied runs of a task by a configuration (``1/3, 2 undone``: two not decided, unfinished
    or crashed), or ``-`` where it has no run."""
    if not cell:
        return "-"
    return f"{cell.satisfied}/{cell.runs}" + (f", {cell.undone} undone" if cell.undone else "")


def _runs_of(row: JudgedRow, **values: Any) -> str:
    return filtered(**{row.filter: row.number}, **values)


def _count(header: str, count: Callable[[Judgement], int], **values: Any) -> Column:
    return Column(header, lambda row: count(row.judgement), sort=lambda row: count(row.judgement),
                  link=lambda row: _runs_of(row, **values) if count(row.judgement) else None)


def _rate(header: str, rate: Callable[[Judgement], Rate], **values: Any) -> Column:
    return Column(header, lambda row: str(rate(row.judgement)), sort=lambda row: _or(rate(row.judgement).value, -1),
                  link=lambda row: _runs_of(row, **values) if rate(row.judgement).whole else None)


def _estimate(header: str, text: Callable[[Judgement], str], value: Callable[[Judgement], float | None], **values: Any) -> Column:
    return Column(header, lambda row: text(row.judgement), sort=lambda row: _or(value(row.judgement), -1),
                  link=lambda row: _runs_of(row, **values) if value(row.judgement) is not None else None)


def fmt_outside(j: Judgement) -> str:
    """``grader_error 2, unsupported 1``: checked runs that ended without a verdict."""
    return fmt_counts(j.outside)


def _pass_k(j: Judgement, which: str) -> float | None:
    return getattr(j.pass_k, which) if j.pass_k else None


VERDICT_COLUMNS = (
    _count("verified", lambda j: j.runs),
    _count("satisfied & passed", lambda j: j.satisfied_passed, cell="satisfied-passed"),
    _count("satisfied & failed", lambda j: j.satisfied_failed, cell="satisfied-failed"),
    _count("rejected & passed", lambda j: j.rejected_passed, cell="rejected-passed"),
    _count("rejected & failed", lambda j: j.rejected_failed, cell="rejected-failed"),
    Column("outside the matrix", lambda row: fmt_outside(row.judgement), sort=lambda row: sum(row.judgement.outside.values()),
           link=lambda row: _runs_of(row, cell="outside") if row.judgement.outside else None),
    _count("unverifiable", lambda j: j.unverifiable, cell="unverifiable"),
    _rate("false satisfied", lambda j: j.false_satisfied, cell="satisfied-failed"),
    _rate("false discovery", lambda j: j.false_discovery, cell="satisfied-failed"),
    _rate("false rejection", lambda j: j.false_rejection, cell="rejected-passed"),
    _estimate("balanced error", lambda j: str(j.balanced_error), lambda j: j.balanced_error.value, wrong="yes"),
)
"""A judgement's verdicts against the checks (``judge.Judgement``, a row's ``judgement``): the confusion
matrix, what is counted apart, and the grader's error rates with their counts and intervals."""

ANSWER_COLUMNS = (
    _rate("first answer passed", lambda j: j.first, check="passed"),
    _rate("final answer passed", lambda j: j.final, check="passed"),
    Column("lift", lambda row: fmt_lift(row.judgement), sort=lambda row: _or(row.judgement.lift.value, -2),
           link=lambda row: _runs_of(row, changed="yes") if row.judgement.lift.value is not None else None),
    _estimate("pass@1", lambda j: fmt_pct(_pass_k(j, "at_1")), lambda j: _pass_k(j, "at_1"), check="passed"),
    _estimate("pass@k", lambda j: fmt_pct(_pass_k(j, "at_k")), lambda j: _pass_k(j, "at_k"), check="passed"),
    _estimate("pass^k", lambda j: fmt_pct(_pass_k(j, "all_k")), lambda j: _pass_k(j, "all_k"), check="passed"),
    Column("k", lambda row: row.judgement.pass_k.k if row.judgement.pass_k else "-"),
    _estimate("corrected pass rate", lambda j: str(j.corrected_pass), lambda j: j.corrected_pass.value),
    Column("tokens/verified success", lambda row: fmt_tokens(row.judgement.tokens_per_success),
           sort=lambda row: _or(row.judgement.tokens_per_success, -1)),
    Column("est. USD/verified success", lambda row: fmt_num(row.judgement.cost_per_success, 4),
           sort=lambda row: _or(row.judgement.cost_per_success, -1)),
)
"""A judgement's answers against the checks: pass rates, the loop's lift, pass@k, the pass rate
corrected for the grader's errors, the spend per verified success."""

JUDGE_COLUMNS = (Column("configuration", lambda row: row.label, link=lambda row: _runs_of(row)), *VERDICT_COLUMNS)
"""The judges table: one row per configuration with a verified run."""

VIEW_COLUMNS = (
    Column("configuration", lambda row: row.label, link=lambda row: _runs_of(row)),
    Column("passes on a cut view", lambda row: fmt_rate(row.window.cut, row.window.viewed), sort=lambda row: row.window.cut),
    Column("false rejection, cut view", lambda row: str(row.window.false_rejection[0]),
           sort=lambda row: _or(row.window.false_rejection[0].value, -1)),
    Column("false rejection, uncut view", lambda row: str(row.window.false_rejection[1]),
           sort=lambda row: _or(row.window.false_rejection[1].value, -1)),
    Column("false satisfied, cut view", lambda row: str(row.window.false_satisfied[0]),
           sort=lambda row: _or(row.window.false_satisfied[0].value, -1)),
    Column("false satisfied, uncut view", lambda row: str(row.window.false_satisfied[1]),
           sort=lambda row: _or(row.window.false_satisfied[1].value, -1)),
)
"""The views table: one row per configuration with a verified run, its passes' verdicts on cut and uncut
views against the checks of the attempts they judged (``analysis.views``)."""

ANSWERS_COLUMNS = (Column("configuration", lambda row: row.label, link=lambda row: _runs_of(row)), *ANSWER_COLUMNS)
"""The answers table: one row per configuration with a verified run."""

GRADER_COLUMNS = (
    Column("rank", lambda row: row.rank or "-", sort=lambda row: _or(row.rank, 10**6)),
    Column("grader", lambda row: row.label, link=lambda row: _runs_of(row)),
    Column("transcripts", lambda row: row.transcripts),
    Column("workers", lambda row: row.workers),
    *VERDICT_COLUMNS,
)
"""The graders table: one row per grader across configurations, ranked by ``judge.RANK_RULE``."""


def grader_numbers(runs: list[Run]) -> dict[str, int]:
    """Each grader key's number, in the order the runs came."""
    return {key: number for number, key in enumerate(dict.fromkeys(run.grader_key for run in runs))}


def grader_rows(runs: list[Run], prices: dict[str, dict[str, float]]) -> list[GraderRow]:
    """The graders table's rows (none when no run was verified), ranked by ``judge.RANK_RULE``; a
    regrade's graders are named by its overrides."""
    judged = judge_groups(runs, lambda run: run.grader_key, prices, Run.judged)
    numbers = grader_numbers(runs)
    headers = {run.grader_key: run.job.record.header for run in runs}
    names = configs.grader_labels((key, headers[key]) for key in judged)
    regrades = {key: " ".join(h.regraded_with or []) for key, h in headers.items() if h.regraded_from}
    if len(set(regrades.values())) == len(regrades) == len(headers):
        names = {key: unescaped(regrades[key]) or names[key] for key in names}
    sets = {transcripts: chr(ord("A") + i) for i, transcripts in enumerate(dict.fromkeys(j.transcripts for j in judged.values()))}
    workers = {key: ", ".join(sorted({run.worker or "?" for run in runs if run.grader_key == key})) for key in judged}
    return [
        GraderRow(names[key], j, "grader", numbers[key], rank, workers[key], f"{sets[j.transcripts]}: {len(j.transcripts)}")
        for rank, key, j in ranking(judged)
    ]


def unescaped(overrides: str) -> str:
    """Overrides as typed: Hydra escapes a swept value's ``${...}``."""
    return re.sub(r"\\(.)", r"\1", overrides)


def judge_rows(runs: list[Run], groups: list[Group], prices: dict[str, dict[str, float]]) -> list[ConfigRow]:
    """The judges and answers tables' rows: one per configuration with a verified run."""
    judged = judge_groups(runs, lambda run: run.group, prices, Run.judged)
    return [ConfigRow(g.label, judged[g.key], "group", g.group, g.window) for g in groups if g.key in judged]


def ranking_lines(runs: list[Run], prices: dict[str, dict[str, float]]) -> list[str]:
    """The graders ranked, a line each, for a console (none when no run was verified)."""
    return [ranking_line(row.rank, row.label, row.judgement) for row in grader_rows(runs, prices)]



def _passes(checked: tuple[bool | None, ...]) -> str:
    return ", ".join("-" if value is None else "pass" if value else "fail" for value in checked)


LOOP_ARM_COLUMNS = (
    Column("configuration", lambda row: row.label, link=lambda row: filtered(group=row.number)),
    Column("arm", lambda row: row.arm.arm),
    Column("runs", lambda row: row.arm.runs, sort=lambda row: row.arm.runs),
    Column("final passed", lambda row: str(Rate(row.arm.passed, row.arm.decided)),
           sort=lambda row: _or(Rate(row.arm.passed, row.arm.decided).value, -1)),
    Column("tokens/success", lambda row: fmt_tokens(row.arm.tokens_per_success), sort=lambda row: _or(row.arm.tokens_per_success, 10**18)),
    Column("est. USD/success", lambda row: fmt_num(row.arm.cost_per_success, 4), sort=lambda row: _or(row.arm.cost_per_success, 10**18)),
    Column("broken revisions", lambda row: "-" if row.broken is None else row.broken, sort=lambda row: _or(row.broken, -1)),
    Column("revisions the grader caused", lambda row: row.arm.grader_revisions, sort=lambda row: row.arm.grader_revisions),
)
"""Does the loop help: one row per configuration, its final pass rate and what a success cost."""

LOOP_PAIR_COLUMNS = (
    Column("rubric loop", lambda row: row.rubric),
    Column("control", lambda row: row.control),
    Column("pairs", lambda row: row.c.cases, sort=lambda row: row.c.cases),
    Column("both passed", lambda row: row.c.both, sort=lambda row: row.c.both),
    Column("rubric only", lambda row: row.c.gained, sort=lambda row: row.c.gained),
    Column("control only", lambda row: row.c.lost, sort=lambda row: row.c.lost),
    Column("neither", lambda row: row.c.neither, sort=lambda row: row.c.neither),
    Column("difference", lambda row: fmt_difference(row.c), sort=lambda row: _or(row.c.difference, -2)),
    Column("p (test)", lambda row: fmt_test(row.c), sort=lambda row: _or(row.c.p, 2)),
    Column("tasks", lambda row: row.c.tasks if row.c.repeated else "-"),
)
"""The rubric loop against each control, paired on task and repeat."""

LOOP_CURVE_COLUMNS = (
    Column("configuration", lambda row: row.label),
    Column("pass", lambda row: row.p.k, sort=lambda row: row.p.k),
    Column("runs that took it", lambda row: row.p.took, sort=lambda row: row.p.took),
    Column("passed after it", lambda row: str(Rate(row.p.passed, row.p.known)), sort=lambda row: _or(row.p.rate, -1)),
    Column("net gain", lambda row: "-" if row.p.gained is None else f"{row.p.gained:+d}", sort=lambda row: _or(row.p.gained, -10**9)),
    Column("tokens of the pass", lambda row: "-" if row.p.k == 1 else fmt_tokens(row.p.tokens), sort=lambda row: _or(row.p.tokens, -1)),
    Column("est. USD of the pass", lambda row: "-" if row.p.k == 1 else fmt_num(row.p.cost, 4), sort=lambda row: _or(row.p.cost, -1)),
    Column("tokens/extra success", lambda row: fmt_tokens(row.p.tokens_per_gain) if row.p.k > 1 else "-",
           sort=lambda row: _or(row.p.tokens_per_gain, 10**18)),
)
"""The pass rate after each pass, per configuration, and what each extra pass cost and gained."""

LOOP_BROKEN_COLUMNS = (
    Column("run", lambda row: row.b.run.index, sort=lambda row: row.b.run.index, link=lambda row: f"#run-{row.b.run.index}"),
    Column("configuration", lambda row: row.label),
    Column("task", lambda row: row.b.run.task[1]),
    Column("repeat", lambda row: "-" if row.b.run.repeat is None else row.b.run.repeat),
    Column("broken at pass", lambda row: row.b.at, sort=lambda row: row.b.at),
    Column("attempts' checks", lambda row: _passes(row.b.run.checked)),
)
"""Revisions that broke an answer that passed its hidden checks, one row per run."""

LOOP_FLIP_COLUMNS = (
    Column("run", lambda row: row.f.run.index, sort=lambda row: row.f.run.index, link=lambda row: f"#run-{row.f.run.index}"),
    Column("configuration", lambda row: row.label),
    Column("task", lambda row: row.f.run.task[1]),
    Column("repeat", lambda row: "-" if row.f.run.repeat is None else row.f.run.repeat),
    Column("criterion", lambda row: row.f.criterion),
    Column("passed at pass", lambda row: row.f.passed_at, sort=lambda row: row.f.passed_at),
    Column("failed at pass", lambda row: row.f.failed_at, sort=lambda row: row.f.failed_at),
)
"""Criteria the grader passed, then failed, in a later pass of the same run."""


def loop_tables(runs: list[Run], groups: list[Group], prices: dict[str, dict[str, float]]) -> tuple[str, dict[str, Table]] | None:
    """"Does the loop help?": what its figures rest on (``loop_value.CHECKS`` or ``VERDICTS``) and its
    tables ``loop-arms``, ``loop-pairs``, ``loop-curve``, ``loop-broken`` (when a revision broke an
    answer) and ``loop-criteria`` (when a criterion passed, then failed); None unless the runs span more
    than one ``loop.arm``."""
    if len({run.arm for run in runs}) < 2:
        return None
    attempts = [run.attempted(prices) for run in runs]
    on = loop_value.basis(attempts)
    names = {g.key: g.label for g in groups}
    broken = loop_value.broken(attempts) if on == loop_value.CHECKS else []
    per_group = Counter(b.run.group for b in broken)
    arm_rows = [ArmRow(names[a.group], g.group, a, per_group[a.group] if on == loop_value.CHECKS else None)
                for a in loop_value.arms(attempts, on) for g in groups if g.key == a.group]
    pairs = [PairRow(names[c.rubric], names[c.control], c.paired) for c in loop_value.comparisons(attempts, on)]
    curve = [CurveRow(names[group], group, point) for group, points in loop_value.curve(attempts, on).items() for point in points]
    found = {"loop-arms": Table("loop-arms", LOOP_ARM_COLUMNS, arm_rows),
             "loop-pairs": Table("loop-pairs", with_holm(LOOP_PAIR_COLUMNS, "p (test)", pairs, lambda row: row.c.p), pairs),
             "loop-curve": Table("loop-curve", LOOP_CURVE_COLUMNS, curve)}
    if broken:
        found["loop-broken"] = Table("loop-broken", LOOP_BROKEN_COLUMNS, [BrokenRow(names[b.run.group], b) for b in broken])
    if flips := loop_value.flipped(attempts):
        found["loop-criteria"] = Table("loop-criteria", LOOP_FLIP_COLUMNS, [FlipRow(names[f.run.group], f) for f in flips])
    return on, found


def _versus(r: policies.Replayed) -> str:
    """``+10.0 pts (95% CI ...), p = 0.5 (exact McNemar)``: the policy's pass rate minus the runs' as they ran; ``-`` for their own."""
    if r.versus is None:
        return "-"
    return f"{fmt_difference(r.versus)}, {fmt_test(r.versus)}" if r.versus.difference is not None else "n/a"


POLICY_COLUMNS = (
    Column("configuration", lambda row: row.label),
    Column("policy", lambda row: row.r.name),
    Column("replayed", lambda row: row.r.replayed, sort=lambda row: row.r.replayed),
    Column("not replayable", lambda row: row.r.not_replayable, sort=lambda row: row.r.not_replayable),
    Column("passed", lambda row: str(Rate(row.r.passed, row.r.known)) if row.r.known else "n/a",
           sort=lambda row: _or(row.r.rate, -1)),
    Column("tokens", lambda row: fmt_tokens(row.r.tokens), sort=lambda row: _or(row.r.tokens, -1)),
    Column("est. USD", lambda row: fmt_num(row.r.cost, 4), sort=lambda row: _or(row.r.cost, -1)),
    Column("tokens vs as run", lambda row: "n/a" if row.r.token_change is None else fmt_pct(row.r.token_change),
           sort=lambda row: _or(row.r.token_change, 10**9)),
    Column("vs as run (paired)", lambda row: _versus(row.r), sort=lambda row: _or(row.r.versus and row.r.versus.difference, -2)),
)
"""Which loop policy: each policy replayed over a configuration's runs, paired against them as they ran."""


POLICY_REAL_COLUMNS = (
    Column("configuration", lambda row: row.label),
    Column("policy", lambda row: row.b.policy.name),
    Column("ran by", lambda row: row.real),
    Column("runs paired", lambda row: row.b.pairs, sort=lambda row: row.b.pairs),
    Column("replayed passed", lambda row: str(Rate(*row.b.predicted)) if row.b.predicted[1] else "n/a"),
    Column("real passed", lambda row: str(Rate(*row.b.passed)) if row.b.passed[1] else "n/a"),
    Column("outcomes alike", lambda row: f"{row.b.agreed[0]}/{row.b.agreed[1]}"),
    Column("replayed tokens", lambda row: fmt_tokens(row.b.predicted_tokens), sort=lambda row: _or(row.b.predicted_tokens, -1)),
    Column("real tokens", lambda row: fmt_tokens(row.b.tokens), sort=lambda row: row.b.tokens),
    Column("real vs replayed tokens", lambda row: "n/a" if row.b.token_change is None else fmt_pct(row.b.token_change),
           sort=lambda row: _or(row.b.token_change, 10**9)),
    Column("replayed est. USD", lambda row: fmt_num(row.b.predicted_cost, 4), sort=lambda row: _or(row.b.predicted_cost, -1)),
    Column("real est. USD", lambda row: fmt_num(row.b.cost, 4), sort=lambda row: _or(row.b.cost, -1)),
)
"""A policy replayed over the runs of the library's policy beside the real runs of a configuration that ran it."""


def policy_tables(runs: list[Run], groups: list[Group], prices: dict[str, dict[str, float]], returns: str = "last",
                  up_to: int | None = None) -> tuple[str, dict[str, Table], list[policies.Replayed], list[policies.Beside]] | None:
    """"Which loop policy?": what it rests on, its tables ``policies`` and (when a configuration alike but
    in its policy ran one of them) ``policies-real``, the replays and the replays beside real runs; None
    unless some run took more than one grading pass (every policy would return what the runs did)."""
    if not any(run.iterations > 1 for run in runs):
        return None
    attempts = [run.attempted(prices) for run in runs]
    on = loop_value.basis(attempts)
    names = {g.key: g.label for g in groups}
    found = policies.replay_all(attempts, on, returns, up_to)
    beside = policies.beside_real(attempts, on)
    rows = [PolicyRow(names[r.group], r) for r in found]
    columns = with_holm(POLICY_COLUMNS, "vs as run (paired)", rows, lambda row: row.r.versus and row.r.versus.p)
    tables = {"policies": Table("policies", columns, rows)}
    if beside:
        tables["policies-real"] = Table("policies-real", POLICY_REAL_COLUMNS,
                                        [BesideRow(names[b.group], names[b.real], b) for b in beside])
    return on, tables, found, beside


def people_rows(runs: list[Run], groups: list[Group]) -> list[PeopleRow]:
    """The grader-against-people table: one row per configuration with labelled runs (people's labels,
    ``labels.json`` in the run dirs, as the truth), and people against the hidden checks where both exist."""
    from ..review.labels import labels_of

    labels = labels_of(run.transcript for run in runs if run.transcript)
    if not labels:
        return []
    names = {g.key: g.label for g in groups}
    ratings: dict[str, list[Rating]] = {}
    resolved = Resolver()
    for run in runs:
        ratings.setdefault(run.group, []).append(run.rating("", resolved))
    rows = []
    for group, own in ratings.items():
        found = against_labels(own, labels)
        if found.verdict.items:
            rows.append(PeopleRow(names[group], found.verdict, found.judgement, found.criteria))
    checked = {r.item: r.checked for own in ratings.values() for r in own}
    known = {item: passed for item, passed in checked.items() if passed is not None}
    both = [(label.satisfied, known[item]) for item, label in labels.items() if label.satisfied is not None and item in known]
    if both:
        people = {item: label for item, label in labels.items() if item in checked}
        rows.append(PeopleRow("people against hidden checks", cohen(both), people_against_checks(people, checked), {}))
    return rows


def _criteria_kappas(row: PeopleRow) -> str:
    return "; ".join(f"{name}: {paired.kappa} ({paired.agreed}/{paired.items})" for name, paired in row.criteria.items()) or "-"


PEOPLE_COLUMNS = (
    Column("configuration", lambda row: row.label),
    Column("labelled", lambda row: row.paired.items, sort=lambda row: row.paired.items),
    Column("agreement", lambda row: row.paired.percent, sort=lambda row: _or(row.paired.percent.value, -1)),
    Column("Cohen's κ", lambda row: row.paired.kappa, sort=lambda row: _or(row.paired.kappa.value, -2)),
    Column("false satisfied", lambda row: row.judgement.false_satisfied if row.judgement else "-"),
    Column("false rejection", lambda row: row.judgement.false_rejection if row.judgement else "-"),
    Column("criteria (Cohen's κ, agreed/labelled)", _criteria_kappas),
)
"""The grader-against-people table: people's labels as the truth."""


def self_rows(runs: list[Run], groups: list[Group]) -> list[SelfRow]:
    """The graders-against-themselves table: one row per configuration that graded a transcript more than
    once (``regrade --repeats``)."""
    ratings: dict[str, list[Rating]] = {}
    resolved = Resolver()
    for run in runs:
        if run.transcript:
            ratings.setdefault(run.group, []).append(run.rating("", resolved))
    names = {g.key: g.label for g in groups}
    return [SelfRow(names[group], self_agreement(own)) for group, own in ratings.items()
            if len({r.item for r in own}) < len(own)]


SELF_COLUMNS = (
    Column("configuration", lambda row: row.label),
    Column("transcripts", lambda row: row.agreement.verdict.items),
    Column("gradings", lambda row: row.agreement.verdict.ratings),
    Column("verdict agreement", lambda row: row.agreement.verdict.percent, sort=lambda row: _or(row.agreement.verdict.percent.value, -1)),
    Column("verdict κ", lambda row: row.agreement.verdict.kappa, sort=lambda row: _or(row.agreement.verdict.kappa.value, -2)),
    Column("changed its verdict on", lambda row: row.agreement.verdict.changed),
    Column("unstable criteria (κ)", lambda row: "; ".join(f"{name} ({row.agreement.criteria[name].kappa.value:.2f})"
                                                          for name in row.agreement.unstable) or row.agreement.unstable_text),
    Column("without a verdict", lambda row: row.agreement.dropped),
)
"""The graders-against-themselves table: each grader's agreement with itself over repeat gradings, and
the gradings without a verdict, which are in none of its figures."""
