"""report.html: one self-contained page (inline CSS, JS and SVG) that opens offline.

A chart of satisfied rate and mean iterations per (worker, grader, rubric), the groups table,
per-criterion pass rates, and every run with its verdict trail in a ``<details>`` element
(``report.html#run-3`` opens run 3's). Tables sort by a click on their headers.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from .report import fmt_counts, fmt_iterations, fmt_num, fmt_rate, run_cost
from .sweep import outcome, summary_row, verdict_line

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:14px;margin:16px 0 6px}
.meta{color:#555}code{font:12px ui-monospace,monospace;background:#f2f4f7;padding:1px 4px;border-radius:3px}
.wide{overflow-x:auto}table{border-collapse:collapse;margin:6px 0 12px}th,td{border-bottom:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f7f8fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
th button{all:unset;cursor:pointer}th button::after{content:" \\2195";color:#aaa}
th[aria-sort=ascending] button::after{content:" \\2191";color:#333}th[aria-sort=descending] button::after{content:" \\2193";color:#333}
.status{padding:1px 6px;border-radius:9px;font-size:12px;white-space:nowrap}
.satisfied{background:#e3f4e5;color:#1b5e20}.unsatisfied{background:#fff3dc;color:#7a4b00}.error{background:#fde4e4;color:#8e1c1c}
details>summary{cursor:pointer;color:#1f5fa8}details[open]{background:#fbfcfd}
ol.trail{margin:6px 0;padding-left:22px}ol.trail li{margin:4px 0}.gap{color:#8e1c1c}
pre{white-space:pre-wrap;max-width:80ch;background:#f2f4f7;padding:6px;border-radius:4px}
svg text{font:12px system-ui,sans-serif;fill:#1d2430}svg .axis{stroke:#c9ced6}svg .title{font-weight:600}
svg .rate{fill:#2e7d32}svg .iterations{fill:#1f5fa8}
"""

JS = """
(function () {
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    target.scrollIntoView();
  }
  function key(cell) {
    var value = cell.getAttribute("data-sort");
    if (value === null) value = cell.textContent.trim();
    var number = parseFloat(value);
    return isNaN(number) ? value.toLowerCase() : number;
  }
  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _status(status: str | None) -> str:
    return f'<span class="status {outcome(status)}">{_e(status)}</span>'


def _label(group: dict[str, Any]) -> str:
    return f"{group['worker']} / {group['grader']} / {group['rubric']}"


def chart(groups: list[dict[str, Any]]) -> str:
    """Inline SVG: satisfied rate and mean iterations to satisfy, one row of bars per group."""
    label_w, panel_w, gap, row_h, top = 300, 240, 70, 26, 34
    scale = max([1, *(g["max_iterations"] for g in groups), *(k for g in groups for k in g["iterations"])])
    height = top + row_h * len(groups) + 24
    width = label_w + 2 * panel_w + gap + 60
    x_rate, x_iter = label_w, label_w + panel_w + gap
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="Satisfied rate and mean iterations to satisfy per group">',
        f'<text class="title" x="{x_rate}" y="14">Satisfied rate</text>',
        f'<text class="title" x="{x_iter}" y="14">Mean iterations to satisfy</text>',
    ]
    bottom = top + row_h * len(groups)
    for i in range(5):
        x = x_rate + panel_w * i / 4
        parts.append(f'<line class="axis" x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}"/>'
                     f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{25 * i}%</text>')
    for i in range(scale + 1):
        x = x_iter + panel_w * i / scale
        parts.append(f'<line class="axis" x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}"/>'
                     f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{i}</text>')
    for row, group in enumerate(groups):
        y = top + row * row_h
        label = _label(group)
        short = label if len(label) <= 44 else label[:43] + "\u2026"
        rate, mean = group["satisfied_rate"], group["mean_iterations"]
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end"><title>{_e(label)}</title>{_e(short)}</text>')
        parts.append(f'<rect class="rate" data-value="{rate:.4f}" x="{x_rate}" y="{y + 3}" width="{panel_w * rate:.1f}" '
                     f'height="{row_h - 8}"><title>{_e(label)}: {fmt_rate(group["satisfied"], group["runs"])}</title></rect>'
                     f'<text x="{x_rate + panel_w * rate + 4:.1f}" y="{y + 15}">{rate:.0%}</text>')
        if mean is None:
            parts.append(f'<text x="{x_iter + 4}" y="{y + 15}">none satisfied</text>')
            continue
        parts.append(f'<rect class="iterations" data-value="{mean:.4f}" x="{x_iter}" y="{y + 3}" '
                     f'width="{panel_w * mean / scale:.1f}" height="{row_h - 8}"><title>{_e(label)}: '
                     f'{mean:.2f} iterations; runs by iterations: {_e(fmt_iterations(group["iterations"]))}</title></rect>'
                     f'<text x="{x_iter + panel_w * mean / scale + 4:.1f}" y="{y + 15}">{mean:.2f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(header: list[str], rows: list[list[tuple[str, Any]]]) -> str:
    """``rows`` of ``(html, sort_key)`` cells; a numeric sort key right-aligns the cell."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for html, sort in row:
            numeric = isinstance(sort, (int, float))
            attrs = (' class="num"' if numeric else "") + (f' data-sort="{_e(sort)}"' if sort is not None else "")
            cells.append(f"<td{attrs}>{html}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="wide"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _groups_table(groups: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    rows = []
    for g in groups:
        links = " ".join(f'<a href="#run-{i}">{_e(records[i]["job"])}</a>' for i in g["runs_index"])
        rows.append([
            (_e(g["worker"]), None), (_e(g["grader"]), None), (_e(g["rubric"]), None), (g["runs"], g["runs"]),
            (_e(fmt_rate(g["satisfied"], g["runs"])), g["satisfied_rate"]),
            (fmt_num(g["mean_iterations"]), g["mean_iterations"] if g["mean_iterations"] is not None else -1),
            (_e(fmt_iterations(g["iterations"])), None), (_e(fmt_counts(g["outcomes"])), None),
            (_e(fmt_counts(g["verdicts"])), None),
            (fmt_num(g["tokens_per_run"]["worker"], 0), g["tokens_per_run"]["worker"]),
            (fmt_num(g["tokens_per_run"]["grader"], 0), g["tokens_per_run"]["grader"]),
            (fmt_num(g["cost_per_run"], 4), g["cost_per_run"] if g["cost_per_run"] is not None else -1),
            (fmt_num(g["cost"], 4), g["cost"] if g["cost"] is not None else -1),
            (fmt_num(g["wall_per_run"]), g["wall_per_run"]), (links, None),
        ])
    return _table(["worker", "grader", "rubric", "runs", "satisfied", "mean iterations to satisfy",
                   "runs by iterations to satisfy", "statuses", "grading verdicts", "worker tokens/run",
                   "grader tokens/run", "est. USD/run", "est. USD", "wall s/run", "runs"], rows)


def _criteria(groups: list[dict[str, Any]]) -> str:
    parts = []
    for g in groups:
        parts.append(f"<h3>{_e(_label(g))}</h3>")
        if not g["criteria"]:
            parts.append("<p>No graded pass.</p>")
            continue
        rows = [[(_e(c["name"]), None),
                 (_e(fmt_rate(*c["first"])), c["first"][0] / c["first"][1]),
                 (_e(fmt_rate(*c["final"])), c["final"][0] / c["final"][1])] for c in g["criteria"]]
        parts.append(_table(["criterion", "first pass", "final pass"], rows))
    return "".join(parts)


def _trail(record: dict[str, Any]) -> str:
    """Each grading pass: verdict, explanation, failing criteria with their gaps."""
    items = []
    for evaluation in record.get("evaluations") or []:
        criteria = evaluation.get("criteria") or []
        failing = [c for c in criteria if not c.get("passed")]
        gaps = "".join(f'<li class="gap">&#x2717; {_e(c.get("name"))}: {_e(c.get("gap") or "")}</li>' for c in failing)
        passed = f" ({len(criteria) - len(failing)} of {len(criteria)} criteria passed)" if criteria else ""
        items.append(f'<li>{_status(evaluation.get("result"))} {_e(evaluation.get("explanation") or "")}{passed}'
                     + (f"<ul>{gaps}</ul>" if gaps else "") + "</li>")
    parts = [f'<ol class="trail">{"".join(items)}</ol>' if items else "<p>No grading pass.</p>"]
    error = record.get("error")
    if error:
        parts.append(f'<p class="gap">{_e(error.get("type"))}: {_e(error.get("message"))}</p>')
    parts.append(f'<p>Run dir <code>{_e(record.get("run_dir"))}</code><br>Overrides '
                 f'<code>{_e(" ".join(record.get("overrides") or []) or "-")}</code></p>')
    if record.get("final_answer"):
        parts.append(f'<details><summary>final answer</summary><pre>{_e(record["final_answer"])}</pre></details>')
    return "".join(parts)


def _runs_table(records: list[dict[str, Any]], prices: dict[str, dict[str, float]]) -> str:
    rows = []
    for index, record in enumerate(records):
        row = summary_row(record)
        cost = run_cost(record, prices)
        passes = len(record.get("evaluations") or [])
        label = f'{passes} grading pass{"" if passes == 1 else "es"}' if passes else "no grading pass"
        trail = (f'<details id="run-{index}"><summary>{label}</summary>'
                 f"{_trail(record)}</details>")
        rows.append([
            (_e(row["job"]), None), (_e(row["worker"]), None), (_e(row["grader"]), None), (_e(row["rubric"]), None),
            (_status(row["status"]), row["status"]), (row["iterations"], row["iterations"]),
            (f'{row["worker_tokens"]:,}', row["worker_tokens"]), (f'{row["grader_tokens"]:,}', row["grader_tokens"]),
            (fmt_num(cost, 4), cost if cost is not None else -1),
            (fmt_num(row["wall_seconds"]), row["wall_seconds"] or 0), (trail, None),
        ])
    return _table(["job", "worker", "grader", "rubric", "status", "iterations", "worker tokens", "grader tokens",
                   "est. USD", "wall s", "verdict trail"], rows)


def render_html(root: Path, records: list[dict[str, Any]], groups: list[dict[str, Any]],
                overall: dict[str, Any], prices: dict[str, dict[str, float]]) -> str:
    """The whole page."""
    unpriced = (f'<p class="meta">No price for {", ".join(f"<code>{_e(m)}</code>" for m in overall["unpriced"])}: '
                "add them to the price table (conf/prices.yaml) for a cost estimate.</p>") if overall["unpriced"] else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rubric_runner report: {_e(root.name or root)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>rubric_runner report</h1>
<p class="meta"><code>{_e(root)}</code>: {_e(verdict_line(records, None))}.<br>
Tokens: worker {overall["tokens"]["worker"]:,}, grader {overall["tokens"]["grader"]:,};
estimated cost {fmt_num(overall["cost"], 4)} USD; wall time {overall["wall_seconds"]:.1f} s.</p>
<h2>Satisfied rate and iterations</h2>
{chart(groups)}
<h2>By worker x grader x rubric</h2>
{_groups_table(groups, records)}
{unpriced}
<h2>Criteria</h2>
<p class="meta">Pass rate on each run's first and final graded pass, criteria matched by name.</p>
{_criteria(groups)}
<h2>Runs</h2>
{_runs_table(records, prices)}
<script>{JS}</script>
</body>
</html>
"""
