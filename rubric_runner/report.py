"""Compare models: runs grouped by (worker, grader, rubric) into report.md and report.html.

Per group: satisfied rate, iterations to satisfy (mean and distribution), final statuses and
grading verdicts, per-criterion pass rates (criteria matched by name), tokens of worker and grader,
an estimated cost from the price table, and wall time. ``rubric-runner report DIR`` writes both
reports (and the summary files) for any sweep or run dir.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from .config import CONF_DIR
from .sweep import collect, exit_code, summary_row, verdict_line, write_all

PRICES_FILE = CONF_DIR / "prices.yaml"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
ROLES = ("worker", "grader")


class PriceError(ValueError):
    """The price table is missing or malformed."""


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """USD per 1M input/output tokens by model, from ``path`` or conf/prices.yaml."""
    path = Path(path) if path else PRICES_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise PriceError(f"price table {path} cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise PriceError(f"price table {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PriceError(f"price table {path} must map model names to {{input, output}}")
    for model, price in data.items():
        if not (isinstance(price, dict) and all(isinstance(price.get(k), (int, float)) for k in ("input", "output"))):
            raise PriceError(f"price table {path}: {model} needs numeric input and output (USD per 1M tokens)")
    return data


def price_of(model: str | None, prices: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """The model's price: by ``provider:model-id``, else by the bare model id."""
    if not model:
        return None
    return prices.get(model) or prices.get(model.partition(":")[2])


def run_cost(record: dict[str, Any], prices: dict[str, dict[str, float]]) -> float | None:
    """Estimated USD of one run (worker + grader); ``None`` when a model has no price."""
    total = 0.0
    for role in ROLES:
        price = price_of((record.get(role) or {}).get("model"), prices)
        if price is None:
            return None
        usage = (record.get("usage") or {}).get(role) or {}
        total += (usage.get("input_tokens", 0) * price["input"] + usage.get("output_tokens", 0) * price["output"]) / 1e6
    return total


def _graded(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in record.get("evaluations") or [] if e.get("criteria")]


def _criteria(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per criterion name: passes on each run's first and final graded pass."""
    table: dict[str, dict[str, Any]] = {}
    for record in records:
        graded = _graded(record)
        if not graded:
            continue
        for when, evaluation in (("first", graded[0]), ("final", graded[-1])):
            for criterion in evaluation["criteria"]:
                name = str(criterion.get("name", "")).strip()
                row = table.setdefault(name, {"name": name, "first": [0, 0], "final": [0, 0]})
                row[when][0] += bool(criterion.get("passed"))
                row[when][1] += 1
    return list(table.values())


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_key(record: dict[str, Any]) -> tuple[str, str, str]:
    """(worker model, grader model, rubric name) of a run; ``?`` where unknown."""
    worker, grader, rubric = (str((record.get(part) or {}).get(key) or "?")
                              for part, key in (("worker", "model"), ("grader", "model"), ("rubric", "name")))
    return worker, grader, rubric


def stats(records: list[dict[str, Any]], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The numbers the reports show for a set of runs (labelled with the first run's group)."""
    satisfied = [r for r in records if r.get("status") == "satisfied"]
    iterations = [int(r.get("iterations") or 0) for r in satisfied]
    costs = [run_cost(r, prices) for r in records]
    priced = None not in costs
    tokens = {role: [((r.get("usage") or {}).get(role) or {}).get("total_tokens", 0) for r in records] for role in ROLES}
    models = {(r.get(role) or {}).get("model") for r in records for role in ROLES}
    worker, grader, rubric = group_key(records[0])
    return {
        "worker": worker,
        "grader": grader,
        "rubric": rubric,
        "runs": len(records),
        "satisfied": len(satisfied),
        "satisfied_rate": len(satisfied) / len(records),
        "mean_iterations": _mean(iterations),
        "iterations": dict(sorted(Counter(iterations).items())),
        "max_iterations": max(int((r.get("grader") or {}).get("max_iterations") or 0) for r in records),
        "outcomes": dict(Counter(r.get("status") for r in records).most_common()),
        "verdicts": dict(Counter(e.get("result") for r in records for e in r.get("evaluations") or []).most_common()),
        "criteria": _criteria(records),
        "tokens": {role: sum(values) for role, values in tokens.items()},
        "tokens_per_run": {role: _mean(values) for role, values in tokens.items()},
        "cost": sum(c for c in costs if c is not None) if priced else None,
        "cost_per_run": _mean([c for c in costs if c is not None]) if priced else None,
        "unpriced": sorted(m for m in models if m and price_of(m, prices) is None),
        "wall_seconds": sum(r.get("wall_seconds") or 0 for r in records),
        "wall_per_run": _mean([r.get("wall_seconds") or 0 for r in records]),
    }


def aggregate(records: list[dict[str, Any]], prices: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One ``stats`` per (worker, grader, rubric), sorted, each with its runs' indexes as ``runs_index``."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, record in enumerate(records):
        groups.setdefault(group_key(record), []).append(index)
    return [
        {**stats([records[i] for i in indexes], prices), "runs_index": indexes}
        for _, indexes in sorted(groups.items())
    ]


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


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


def render_markdown(root: Path, records: list[dict[str, Any]], groups: list[dict[str, Any]],
                    overall: dict[str, Any], prices: dict[str, dict[str, float]]) -> str:
    """report.md: groups (from ``aggregate``), criteria per group, every run."""
    lines = [
        "# rubric_runner report",
        "",
        f"`{root}`: {verdict_line(records, None)}.",
        f"Tokens: worker {overall['tokens']['worker']:,}, grader {overall['tokens']['grader']:,}; "
        f"estimated cost {fmt_num(overall['cost'], 4)} USD; wall time {overall['wall_seconds']:.1f} s.",
        "",
        "## By worker x grader x rubric",
        "",
    ]
    lines += _table(
        ["worker", "grader", "rubric", "runs", "satisfied", "mean iterations to satisfy", "runs by iterations to satisfy",
         "statuses", "grading verdicts", "worker tokens/run", "grader tokens/run", "est. USD/run", "est. USD", "wall s/run"],
        [[g["worker"], g["grader"], g["rubric"], g["runs"], fmt_rate(g["satisfied"], g["runs"]), fmt_num(g["mean_iterations"]),
          fmt_iterations(g["iterations"]), fmt_counts(g["outcomes"]), fmt_counts(g["verdicts"]),
          fmt_num(g["tokens_per_run"]["worker"], 0), fmt_num(g["tokens_per_run"]["grader"], 0),
          fmt_num(g["cost_per_run"], 4), fmt_num(g["cost"], 4), fmt_num(g["wall_per_run"])] for g in groups],
    )
    lines += ["", "## Criteria", "", "Pass rate on each run's first and final graded pass, criteria matched by name.", ""]
    for g in groups:
        lines += [f"### {g['worker']} / {g['grader']} / {g['rubric']}", ""]
        if not g["criteria"]:
            lines += ["No graded pass.", ""]
            continue
        lines += _table(["criterion", "first pass", "final pass"],
                        [[c["name"], fmt_rate(*c["first"]), fmt_rate(*c["final"])] for c in g["criteria"]])
        lines.append("")
    lines += ["## Runs", ""]
    rows = []
    for record in records:
        row = summary_row(record)
        rows.append([row["job"], row["worker"], row["grader"], row["rubric"], row["status"], row["iterations"],
                     row["worker_tokens"], row["grader_tokens"], fmt_num(run_cost(record, prices), 4),
                     fmt_num(row["wall_seconds"]), row["error"] or ""])
    lines += _table(["job", "worker", "grader", "rubric", "status", "iterations", "worker tokens", "grader tokens",
                     "est. USD", "wall s", "error"], rows)
    if overall["unpriced"]:
        lines += ["", "No price for: " + ", ".join(f"`{m}`" for m in overall["unpriced"])
                  + " (add them to the price table, conf/prices.yaml, for a cost estimate)."]
    return "\n".join(lines) + "\n"


def write_reports(root: Path, records: list[dict[str, Any]], prices_path: str | Path | None = None) -> list[Path]:
    """report.md and report.html in ``root``; returns their paths."""
    from .report_html import render_html

    prices = load_prices(prices_path)
    parts = (root, records, aggregate(records, prices), stats(records, prices), prices)
    md, html = root / REPORT_MD, root / REPORT_HTML
    md.write_text(render_markdown(*parts), encoding="utf-8")
    html.write_text(render_html(*parts), encoding="utf-8")
    return [md, html]


def main(argv: list[str]) -> int:
    """``rubric-runner report DIR [--fail-under RATE] [--prices FILE]``."""
    parser = argparse.ArgumentParser(
        prog="rubric-runner report",
        description="Write summary.jsonl, summary.csv, report.md and report.html into a sweep or run dir, "
        "from its runs' result.json files.",
    )
    parser.add_argument("dir", type=Path, help="a sweep dir (outputs/multirun/DATE/TIME), a run dir, or any dir above them")
    parser.add_argument("--fail-under", type=float, metavar="RATE",
                        help="exit 4 when the fraction of satisfied runs is below RATE (0..1)")
    parser.add_argument("--prices", type=Path, metavar="FILE", help=f"price table (default {PRICES_FILE})")
    args = parser.parse_args(argv)
    if args.fail_under is not None and not 0 <= args.fail_under <= 1:
        parser.error(f"--fail-under must be a fraction from 0 to 1, got {args.fail_under}")
    if not args.dir.is_dir():
        parser.error(f"{args.dir} is not a directory")
    records = collect(args.dir)
    if not records:
        parser.error(f"no runs under {args.dir}: no dir holds a result.json or a .hydra/ config")
    try:
        paths = write_all(args.dir, records, args.prices)
    except PriceError as exc:
        parser.error(str(exc))
    code = exit_code(records, args.fail_under) if args.fail_under is not None else 0
    print(f"report: {verdict_line(records, args.fail_under)} -> exit {code}")
    for path in paths:
        print(f"  {path}")
    return code

