"""report.md and report.html, rendered from Jinja2 templates (HTML autoescaped) over ``columns``.

report.html is one self-contained page (inline CSS, JS and SVG) that opens offline: a chart of
satisfied rate and mean passes to satisfied per configuration, the groups table, the jobs that did not
start, the graders against hidden verification, the task x configuration matrix, per-criterion rates,
and every run with its hidden checks and its verdict trail, drawn when opened from the page's JSON
(``report.html#run-3`` opens run 3's). Tables sort by a click on their headers; every rate links to
the runs behind it; the matrix and the runs table show a page at a time, filtered
(``report.html#runs?status=failed``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from jinja2.environment import TemplateStream

from ..analysis.judge import RANK_RULE
from ..analysis.loop_value import Point
from ..analysis.numbers import fmt_num, fmt_pct, fmt_rate, fmt_tokens
from ..analysis.spend import spend_lines
from ..records import Job
from .columns import (
    ANSWERS_COLUMNS,
    GRADER_COLUMNS,
    GROUP_COLUMNS,
    JOB_COLUMNS,
    JUDGE_COLUMNS,
    PEOPLE_COLUMNS,
    RUN_COLUMNS,
    SELF_COLUMNS,
    VIEW_COLUMNS,
    CurveRow,
    Table,
    criteria_columns,
    fmt_passes_to_satisfied,
    grader_numbers,
    grader_rows,
    judge_rows,
    loop_tables,
    matrix_columns,
    people_rows,
    policy_tables,
    run_filters,
    run_rows,
    self_rows,
    with_holm,
)
from .partial import Completion
from .runs import Run, unstarted
from .stats import Group, by_group, elapsed, matrix, stats
from .summary import verdict_line

TEMPLATES = Path(__file__).resolve().parent / "templates"
STREAM_PIECES = 256
"""A rendered report is written this many template pieces at a time."""


@cache
def environment() -> Environment:
    """The templates: HTML autoescaped, Markdown as written."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      keep_trailing_newline=True)
    env.globals.update(fmt_num=fmt_num, fmt_tokens=fmt_tokens, rank_rule=RANK_RULE)
    return env


def chart(groups: list[Group]) -> dict[str, Any]:
    """The SVG chart's geometry: satisfied rate (of the decided runs; none drawn where none was decided)
    and mean grading passes to satisfied, one row of bars per group."""
    label_w, panel_w, gap, row_h, top = 300, 240, 70, 26, 34
    scale = max([1, *(g.max_iterations for g in groups), *(k for g in groups for k in g.passes_to_satisfied)])
    x_rate, x_iter = label_w, label_w + panel_w + gap
    bottom = top + row_h * len(groups)
    ticks = [{"x": f"{x_rate + panel_w * i / 4:.1f}", "label": f"{25 * i}%"} for i in range(5)]
    ticks += [{"x": f"{x_iter + panel_w * i / scale:.1f}", "label": str(i)} for i in range(scale + 1)]
    rows = []
    for row, group in enumerate(groups):
        y = top + row * row_h
        label = group.label
        value, mean = group.satisfied_rate, group.mean_passes_to_satisfied
        rate = value or 0.0
        bar = {
            "label": label, "short": label if len(label) <= 44 else label[:43] + "\u2026", "y": y + 3, "text_y": y + 15,
            "rate": "" if value is None else f"{rate:.4f}", "rate_width": f"{panel_w * rate:.1f}",
            "rate_text": "n/a" if value is None else fmt_pct(rate, 0),
            "rate_title": fmt_rate(group.satisfied, group.decided), "rate_text_x": f"{x_rate + panel_w * rate + 4:.1f}",
            "mean": None,
        }
        if mean is not None:
            taken = fmt_passes_to_satisfied(group.passes_to_satisfied)
            bar.update(mean=f"{mean:.4f}", mean_width=f"{panel_w * mean / scale:.1f}", mean_text=fmt_num(mean),
                       mean_title=f"{fmt_num(mean)} passes; runs by passes to satisfied: {taken}",
                       mean_text_x=f"{x_iter + panel_w * mean / scale + 4:.1f}")
        rows.append(bar)
    return {
        "width": label_w + 2 * panel_w + gap + 60, "height": top + row_h * len(groups) + 24, "x_rate": x_rate,
        "x_iter": x_iter, "bottom": bottom, "axis_top": top - 6, "label_end": label_w - 8, "bar_height": row_h - 8,
        "titles": [{"x": x_rate, "label": "Satisfied rate"}, {"x": x_iter, "label": "Mean passes to satisfied"}],
        "ticks": ticks, "rows": rows,
    }


LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def loop_chart(curve: list[CurveRow]) -> dict[str, Any]:
    """The SVG of "Does the loop help?": the pass rate after each pass, a line per configuration."""
    left, width, top, height, legend = 56, 320, 16, 180, 24
    lines: dict[str, list[Point]] = {}
    for row in curve:
        lines.setdefault(row.label, []).append(row.p)
    most = max([2, *(p.k for points in lines.values() for p in points)])
    x = {k: left + width * (k - 1) / (most - 1) for k in range(1, most + 1)}
    drawn = []
    for number, (label, points) in enumerate(lines.items()):
        dots = [{"x": f"{x[p.k]:.1f}", "y": f"{top + height * (1 - p.rate):.1f}", "title": f"{label}, pass {p.k}: {p.passed}/{p.known}"}
                for p in points if p.rate is not None]
        drawn.append({"label": label, "colour": LINE_COLOURS[number % len(LINE_COLOURS)], "dots": dots,
                      "points": " ".join(f"{d['x']},{d['y']}" for d in dots), "legend_y": top + 8 + legend * number})
    return {
        "width": left + width + 40 + 320, "height": max(top + height + 40, top + legend * len(drawn) + 16),
        "left": left, "right": left + width, "top": top, "bottom": top + height, "legend_x": left + width + 40,
        "x_ticks": [{"x": f"{x[k]:.1f}", "label": str(k)} for k in x],
        "y_ticks": [{"y": f"{top + height * (1 - i / 4):.1f}", "label": f"{25 * i}%"} for i in range(5)],
        "lines": drawn,
    }


def tables(jobs: list[Job], runs: list[Run], groups: list[Group], prices: dict[str, dict[str, float]]) -> dict[str, Table]:
    """The reports' tables: ``groups``, ``jobs`` (that did not start, when any), ``matrix`` (when there are
    tasks or configurations to compare), ``runs``, and ``judges``, ``answers``, ``views`` and ``graders``
    (when some run was verified)."""
    has_tasks = any(run.task_id for run in runs) or len({run.task_key for run in runs}) > 1
    models, task_rows = matrix(runs, groups)
    graders = grader_numbers(runs)
    found = {
        "groups": Table("groups", GROUP_COLUMNS, groups),
        "jobs": Table("jobs", JOB_COLUMNS, unstarted(jobs, runs)),
        "matrix": Table("matrix", matrix_columns(models), task_rows, filters=lambda row: {"task": row.task},
                        options={"task": []}, paged=True),
        "runs": Table(
            "runs", tuple(c for c in RUN_COLUMNS if has_tasks or not c.tasks_only),
            run_rows(runs, groups, graders, prices), filters=run_filters,
            options={
                "group": [(g.group, g.label) for g in groups],
                "status": [(status, status) for status in sorted({run.status.value for run in runs})],
                "check": [(check, check) for check in ("passed", "failed", "unverifiable", "none")],
                "task": [],
            },
            paged=True,
        ),
    }
    if not found["jobs"].rows:
        del found["jobs"]
    if not has_tasks and len(models) < 2:
        del found["matrix"]
    judges = judge_rows(runs, groups, prices)
    if judges:
        found.update(judges=Table("judges", JUDGE_COLUMNS, judges), answers=Table("answers", with_holm(ANSWERS_COLUMNS, "lift", judges, lambda row: row.judgement.lift_p), judges),
                     views=Table("views", VIEW_COLUMNS, judges),
                     graders=Table("graders", GRADER_COLUMNS, grader_rows(runs, prices)))
    people = people_rows(runs, groups)
    if people:
        found["people"] = Table("people", PEOPLE_COLUMNS, people)
    selves = self_rows(runs, groups)
    if selves:
        found["self"] = Table("self", SELF_COLUMNS, selves)
    return found


def render(templates: list[str], root: Path, jobs: list[Job], runs: list[Run], prices: dict[str, dict[str, float]],
           progress: str | None, done: Completion) -> list[TemplateStream]:
    """The reports (``report.md``, ``report.html``) of ``jobs`` and their ``runs``, found under ``root``,
    each a stream of its text, drawn as it is written, so no report is held whole; ``progress`` says how
    far they have come while they still run, ``done`` how much of them finished."""
    groups = by_group(runs, prices)
    context = {
        "root": root, "verdict": verdict_line(jobs, runs, None, done), "progress": progress, "partial": done.line(),
        "overall": stats(runs, prices) if runs else None, "elapsed": elapsed(jobs, runs),
        "groups": groups, "tables": tables(jobs, runs, groups, prices), "chart": chart(groups),
        "criteria": [(g, Table(f"criteria-{g.group}", criteria_columns(g.group), g.criteria)) for g in groups],
        "spend": spend_lines([job.record for job in jobs]),
        "loop_help": None,
        "policies": None,
        "runs": runs,
    }
    if (loop := loop_tables(runs, groups, prices)) is not None:
        context["loop_help"] = {"on": loop[0], "tables": loop[1], "chart": loop_chart(loop[1]["loop-curve"].rows)}
    if (replayed := policy_tables(runs, groups, prices)) is not None:
        context["policies"] = {"on": replayed[0], "tables": replayed[1]}
    if any(name.endswith(".html") for name in templates):
        context["trails"] = [run.trail for run in runs]
    streams = [environment().get_template(name).stream(context) for name in templates]
    for stream in streams:
        stream.enable_buffering(STREAM_PIECES)
    return streams
