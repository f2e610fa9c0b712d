"""report.md and report.html, rendered from Jinja2 templates (HTML autoescaped) over ``columns``.

report.html is one self-contained page (inline CSS, JS and SVG) that opens offline: a chart of
satisfied rate and mean iterations per (worker, grader, rubric), the groups table, per-criterion
pass rates, and every run with its verdict trail in a ``<details>`` element (``report.html#run-3``
opens run 3's). Tables sort by a click on their headers.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..budget import spend_lines
from ..records import Job, Outcome, Status
from .columns import CRITERIA_COLUMNS, GROUP_COLUMNS, RUN_COLUMNS, fmt_iterations, fmt_num, fmt_rate, run_rows
from .prices import run_cost
from .stats import by_group, stats
from .summary import verdict_line

TEMPLATES = Path(__file__).resolve().parent / "templates"


def outcome(status: str | None) -> str:
    """The CSS class of a status or verdict: satisfied, unsatisfied or error."""
    return Status(status).outcome if status in Status._value2member_map_ else Outcome.ERROR


def _cell(value: Any) -> str:
    """A Markdown table cell: no pipe or newline breaks the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


@cache
def environment() -> Environment:
    """The templates: HTML autoescaped, Markdown as written."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      keep_trailing_newline=True)
    env.filters["cell"] = _cell
    env.globals.update(fmt_num=fmt_num, outcome=outcome, is_number=lambda v: isinstance(v, (int, float)))
    return env


def chart(groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The SVG chart's geometry: satisfied rate and mean iterations to satisfy, one row of bars per group."""
    label_w, panel_w, gap, row_h, top = 300, 240, 70, 26, 34
    scale = max([1, *(g["max_iterations"] for g in groups), *(k for g in groups for k in g["iterations"])])
    x_rate, x_iter = label_w, label_w + panel_w + gap
    bottom = top + row_h * len(groups)
    ticks = [{"x": f"{x_rate + panel_w * i / 4:.1f}", "label": f"{25 * i}%"} for i in range(5)]
    ticks += [{"x": f"{x_iter + panel_w * i / scale:.1f}", "label": str(i)} for i in range(scale + 1)]
    rows = []
    for row, group in enumerate(groups):
        y = top + row * row_h
        label = f"{group['worker']} / {group['grader']} / {group['rubric']}"
        rate, mean = group["satisfied_rate"], group["mean_iterations"]
        bar = {
            "label": label, "short": label if len(label) <= 44 else label[:43] + "\u2026", "y": y + 3, "text_y": y + 15,
            "rate": f"{rate:.4f}", "rate_width": f"{panel_w * rate:.1f}", "rate_text": f"{rate:.0%}",
            "rate_title": fmt_rate(group["satisfied"], group["runs"]), "rate_text_x": f"{x_rate + panel_w * rate + 4:.1f}",
            "mean": None,
        }
        if mean is not None:
            bar.update(mean=f"{mean:.4f}", mean_width=f"{panel_w * mean / scale:.1f}", mean_text=f"{mean:.2f}",
                       mean_title=f"{mean:.2f} iterations; runs by iterations: {fmt_iterations(group['iterations'])}",
                       mean_text_x=f"{x_iter + panel_w * mean / scale + 4:.1f}")
        rows.append(bar)
    return {
        "width": label_w + 2 * panel_w + gap + 60, "height": top + row_h * len(groups) + 24, "x_rate": x_rate,
        "x_iter": x_iter, "bottom": bottom, "axis_top": top - 6, "label_end": label_w - 8, "bar_height": row_h - 8,
        "titles": [{"x": x_rate, "label": "Satisfied rate"}, {"x": x_iter, "label": "Mean iterations to satisfy"}],
        "ticks": ticks, "rows": rows,
    }


def render(template: str, root: Path, jobs: list[Job], prices: dict[str, dict[str, float]]) -> str:
    """One report (``report.md`` or ``report.html``) of ``jobs``, found under ``root``."""
    groups = by_group(jobs, prices)
    for group in groups:
        group["links"] = [(index, jobs[index].job) for index in group["runs_index"]]
    return environment().get_template(template).render(
        root=root, verdict=verdict_line(jobs, None), overall=stats([job.record for job in jobs], prices),
        groups=groups, runs=run_rows(jobs, lambda job: run_cost(job.record, prices)), chart=chart(groups),
        group_columns=GROUP_COLUMNS, run_columns=RUN_COLUMNS, criteria_columns=CRITERIA_COLUMNS,
        spend=spend_lines([job.record for job in jobs]),
    )
