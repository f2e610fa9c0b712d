"""The numbers the reports show, over runs (a task x repeat each): per configuration (a group, see
``configs``), over all runs, and per task and configuration.

Per group: tasks and runs, the runs outside the rates (unfinished or crashed: counted beside the rates,
never in them), the satisfied rate over the decided runs (``records.satisfied_rate``), satisfied@1,
satisfied@k and satisfied^k over the tasks (``passk.satisfied_k``), grading passes to satisfied (mean and
distribution), final statuses and grading verdicts (and those the library marked unverified), the
grader's view (``analysis.views``: passes on a cut view, and its mistakes on cut and uncut views),
per-criterion rates (criteria matched by name), tokens, an estimated cost from the price table, and the
time the runs took (summed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..analysis.views import Pass, window
from ..config.prices import price_of
from ..records import Job, Status, satisfied_rate
from ..records.passk import satisfied_k
from . import configs
from .runs import Run


def _criteria(runs: list[Run]) -> list[dict[str, Any]]:
    """Per criterion name: met on each run's first and final graded pass."""
    table: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.criteria is None:
            continue
        for when, criteria in zip(("first", "final"), run.criteria):
            for name, passed in criteria:
                row = table.setdefault(name, {"name": name, "first": [0, 0], "final": [0, 0]})
                row[when][0] += passed
                row[when][1] += 1
    return list(table.values())


def _passes(run: Run) -> list[Pass]:
    """Each grading pass of ``run``: its view, verdict, whether unverified, and its attempt's checks."""
    checked = list(run.checked) + [None] * (len(run.verdicts) - len(run.checked))
    return list(zip(run.cut, run.verdicts, run.unverified, checked))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def satisfied_at(runs: list[Run]) -> dict[str, Any]:
    """Tasks, and satisfied@1, satisfied@k and satisfied^k over the tasks' decided runs
    (``passk.satisfied_k``; k: the fewest decided runs of a task); None each when no run was decided."""
    k = satisfied_k((run.task_key, run.status) for run in runs)
    return {"tasks": len({run.task_key for run in runs}), "k": k.k if k else None, "satisfied_at_1": k.at_1 if k else None,
            "satisfied_at_k": k.at_k if k else None, "satisfied_hat_k": k.all_k if k else None}


def stats(runs: list[Run], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The numbers the reports show for a set of runs."""
    satisfied = [r for r in runs if r.status is Status.SATISFIED]
    passes = [r.iterations for r in satisfied]
    costs = [r.cost(prices) for r in runs]
    priced = None not in costs
    tokens = {"worker": [r.worker_tokens for r in runs], "grader": [r.grader_tokens for r in runs]}
    models = {model for r in runs for model, _, _ in r.billed}
    seconds = [r.wall_seconds or 0 for r in runs]
    return {
        "worker": runs[0].worker or "?", "grader": runs[0].grader or "?", "rubric": runs[0].task_key[0],
        **satisfied_at(runs),
        "runs": len(runs),
        "decided": sum(r.status.decided for r in runs),
        "outside": dict(Counter(r.status.value for r in runs if not r.status.decided).most_common()),
        "satisfied": len(satisfied),
        "satisfied_rate": satisfied_rate(r.status for r in runs),
        "mean_passes_to_satisfied": _mean(passes),
        "passes_to_satisfied": dict(sorted(Counter(passes).items())),
        "max_iterations": max(r.max_iterations for r in runs),
        "outcomes": dict(Counter(r.status.value for r in runs).most_common()),
        "verdicts": dict(Counter(verdict for r in runs for verdict in r.verdicts).most_common()),
        "unverified": sum(sum(r.unverified) for r in runs),
        "window": window(p for r in runs for p in _passes(r)),
        "criteria": _criteria(runs),
        "tokens": {role: sum(values) for role, values in tokens.items()},
        "tokens_per_run": {role: _mean(values) for role, values in tokens.items()},
        "cost": sum(c for c in costs if c is not None) if priced else None,
        "cost_per_run": _mean([c for c in costs if c is not None]) if priced else None,
        "unpriced": sorted(m for m in models if m and price_of(m, prices) is None),
        "task_seconds": sum(seconds),
        "task_seconds_per_run": _mean(seconds),
    }


def _moment(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def elapsed(jobs: list[Job], runs: list[Run]) -> float | None:
    """Wall-clock seconds during which a job or run of the set was going: the length of the union of
    their start-to-end spans (runs at once count once; the time between an interrupted run and its
    resume, not at all); None when no span is recorded."""
    spans = sorted((start, end) for start, end in (
        *((_moment(job.record.started_at), _moment(job.record.ended_at)) for job in jobs),
        *((_moment(run.started_at), _moment(run.ended_at)) for run in runs),
    ) if start and end and end >= start)
    if not spans:
        return None
    total, (start, end) = 0.0, spans[0]
    for next_start, next_end in spans[1:]:
        if next_start > end:
            total, start = total + (end - start).total_seconds(), next_start
        end = max(end, next_end)
    return total + (end - start).total_seconds()


def by_group(runs: list[Run], prices: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One ``stats`` per configuration, in the order the jobs came; each with its number (``group``),
    its key and its ``label`` (the keys in which it differs from the others)."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    names = configs.group_labels((key, members[0].job.record.header) for key, members in groups.items())
    return [{**stats(members, prices), "group": number, "key": key, "label": names[key]}
            for number, (key, members) in enumerate(groups.items())]


def matrix(runs: list[Run], groups: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The task x configuration matrix: (column labels, rows). A row is a task (``rubric``, ``task``)
    with one cell per group (``None`` where the group did not run it: else ``satisfied``, ``undone``
    (not decided: unfinished or crashed) and ``runs`` of its runs, their ``worst`` status, and the
    ``group``), and ``missed_by``: the groups that did not satisfy it in every run they decided."""
    column = {g["key"]: i for i, g in enumerate(groups)}
    models = [g["label"] for g in groups]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        rubric, task = run.task_key
        row = rows.setdefault((rubric, task), {"rubric": rubric, "task": task, "cells": [None] * len(models)})
        i = column[run.group]
        cell = row["cells"][i] = row["cells"][i] or {"satisfied": 0, "undone": 0, "runs": 0, "worst": Status.SATISFIED,
                                                      "group": groups[i]["group"]}
        cell["satisfied"] += run.status is Status.SATISFIED
        cell["undone"] += not run.status.decided
        cell["runs"] += 1
        cell["worst"] = max(cell["worst"], run.status, key=lambda status: status.severity)
    for row in rows.values():
        row["missed_by"] = [models[i] for i, cell in enumerate(row["cells"]) if cell and cell["satisfied"] + cell["undone"] < cell["runs"]]
    return models, list(rows.values())
