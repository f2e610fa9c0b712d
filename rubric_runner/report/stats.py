"""The numbers the reports show, over runs (a task x repeat each): per (worker, grader, rubric)
group, over all runs, and per task and model.

Per group: tasks and runs, satisfied rate, pass@k and pass^k over the tasks (k: runs per task),
iterations to satisfy (mean and distribution), final statuses and grading verdicts, per-criterion
pass rates (criteria matched by name), tokens of worker and grader, an estimated cost from the price
table, and wall time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..analysis.prices import price_of
from ..records import Status
from .runs import Run

UNDONE = frozenset({Status.RUNNING, Status.NOT_RUN, Status.BUDGET_EXCEEDED, Status.INTERRUPTED})
"""Runs left to finish later (still going, kept from it by a budget, or interrupted): the matrix does
not count them as a model missing the task."""


def _criteria(runs: list[Run]) -> list[dict[str, Any]]:
    """Per criterion name: passes on each run's first and final graded pass."""
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


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def task_key(run: Run) -> tuple[str, str]:
    """(rubric, task) of a run: what makes two runs the same task (a follow-up turn's rubric as in its group)."""
    return run.group[2], run.task


def _per_task(runs: list[Run]) -> dict[str, Any]:
    """Tasks, pass@k (satisfied at least once), pass^k (satisfied every time), and k (runs per task)."""
    by_task: dict[tuple[str, str], list[bool]] = {}
    for run in runs:
        by_task.setdefault(task_key(run), []).append(run.status is Status.SATISFIED)
    sizes = sorted({len(outcomes) for outcomes in by_task.values()})
    return {
        "tasks": len(by_task),
        "pass_at_k": sum(any(v) for v in by_task.values()),
        "pass_hat_k": sum(all(v) for v in by_task.values()),
        "k": str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}",
    }


def stats(runs: list[Run], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The numbers the reports show for a set of runs (labelled with the first run's group)."""
    satisfied = [r for r in runs if r.status is Status.SATISFIED]
    iterations = [r.iterations for r in satisfied]
    costs = [r.cost(prices) for r in runs]
    priced = None not in costs
    tokens = {"worker": [r.worker_tokens for r in runs], "grader": [r.grader_tokens for r in runs]}
    models = {model for r in runs for model, _, _ in r.billed}
    worker, grader, rubric = runs[0].group
    return {
        "worker": worker,
        "grader": grader,
        "rubric": rubric,
        **_per_task(runs),
        "runs": len(runs),
        "satisfied": len(satisfied),
        "satisfied_rate": len(satisfied) / len(runs),
        "mean_iterations": _mean(iterations),
        "iterations": dict(sorted(Counter(iterations).items())),
        "max_iterations": max(r.max_iterations for r in runs),
        "outcomes": dict(Counter(r.status.value for r in runs).most_common()),
        "verdicts": dict(Counter(verdict for r in runs for verdict in r.verdicts).most_common()),
        "criteria": _criteria(runs),
        "tokens": {role: sum(values) for role, values in tokens.items()},
        "tokens_per_run": {role: _mean(values) for role, values in tokens.items()},
        "cost": sum(c for c in costs if c is not None) if priced else None,
        "cost_per_run": _mean([c for c in costs if c is not None]) if priced else None,
        "unpriced": sorted(m for m in models if m and price_of(m, prices) is None),
        "wall_seconds": sum(r.wall_seconds or 0 for r in runs),
        "wall_per_run": _mean([r.wall_seconds or 0 for r in runs]),
    }


def by_group(runs: list[Run], prices: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One ``stats`` per (worker, grader, rubric), sorted; each with its number as ``group``."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    return [{**stats(members, prices), "group": number} for number, (_, members) in enumerate(sorted(groups.items()))]


def matrix(runs: list[Run], groups: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The task x model matrix: (models, rows). A model is a worker, or a grader when only graders
    differ, or both; a row is a task (``rubric``, ``task``) with one cell per model (``None`` where the
    model did not run it: else ``satisfied``, ``undone`` (see ``UNDONE``) and ``runs`` of its runs,
    their ``worst`` status, and the ``group`` they belong to), and ``missed_by``: the models that did
    not satisfy it in every run they finished."""
    workers, graders = {g["worker"] for g in groups}, {g["grader"] for g in groups}

    def model(worker: str, grader: str) -> str:
        if len(workers) == 1 and len(graders) > 1:
            return grader
        return worker if len(graders) == 1 else f"{worker} / {grader}"

    number = {(g["worker"], g["grader"], g["rubric"]): g["group"] for g in groups}
    models = list(dict.fromkeys(model(g["worker"], g["grader"]) for g in groups))
    column = {name: i for i, name in enumerate(models)}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        key = run.group
        rubric, task = task_key(run)
        row = rows.setdefault((rubric, task), {"rubric": rubric, "task": task, "cells": [None] * len(models)})
        i = column[model(*key[:2])]
        cell = row["cells"][i] = row["cells"][i] or {"satisfied": 0, "undone": 0, "runs": 0, "worst": Status.SATISFIED,
                                                      "group": number[key]}
        cell["satisfied"] += run.status is Status.SATISFIED
        cell["undone"] += run.status in UNDONE
        cell["runs"] += 1
        cell["worst"] = max(cell["worst"], run.status, key=lambda status: status.severity)
    for row in rows.values():
        row["missed_by"] = [models[i] for i, cell in enumerate(row["cells"]) if cell and cell["satisfied"] + cell["undone"] < cell["runs"]]
    return models, list(rows.values())
