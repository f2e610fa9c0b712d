"""The numbers the reports show: per (worker, grader, rubric) group and over all runs.

Per group: satisfied rate, iterations to satisfy (mean and distribution), final statuses and
grading verdicts, per-criterion pass rates (criteria matched by name), tokens of worker and grader,
an estimated cost from the price table, and wall time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..records import Job, RunRecord, Status
from .prices import ROLES, price_of, run_cost


def _graded(record: RunRecord) -> list[Any]:
    return [e for e in record.evaluations if e.criteria]


def _criteria(records: list[RunRecord]) -> list[dict[str, Any]]:
    """Per criterion name: passes on each run's first and final graded pass."""
    table: dict[str, dict[str, Any]] = {}
    for record in records:
        graded = _graded(record)
        if not graded:
            continue
        for when, evaluation in (("first", graded[0]), ("final", graded[-1])):
            for criterion in evaluation.criteria:
                name = criterion.name.strip()
                row = table.setdefault(name, {"name": name, "first": [0, 0], "final": [0, 0]})
                row[when][0] += criterion.passed
                row[when][1] += 1
    return list(table.values())


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_key(record: RunRecord) -> tuple[str, str, str]:
    """(worker model, grader model, rubric name) of a run; ``?`` where unknown. A follow-up turn
    groups apart from first turns, its rubric shown as ``code (turn 2)``."""
    rubric = record.rubric.name or "?"
    return record.worker.model or "?", record.grader.model or "?", f"{rubric} (turn {record.turn})" if record.turn else rubric


def stats(records: list[RunRecord], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The numbers the reports show for a set of runs (labelled with the first run's group)."""
    satisfied = [r for r in records if r.status is Status.SATISFIED]
    iterations = [r.iterations for r in satisfied]
    costs = [run_cost(r, prices) for r in records]
    priced = None not in costs
    tokens = {role: [r.usage[role].total_tokens if role in r.usage else 0 for r in records] for role in ROLES}
    models = {getattr(r, role).model for r in records for role in ROLES}
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
        "max_iterations": max(r.grader.max_iterations or 0 for r in records),
        "outcomes": dict(Counter(r.status.value for r in records).most_common()),
        "verdicts": dict(Counter(e.result for r in records for e in r.evaluations).most_common()),
        "criteria": _criteria(records),
        "tokens": {role: sum(values) for role, values in tokens.items()},
        "tokens_per_run": {role: _mean(values) for role, values in tokens.items()},
        "cost": sum(c for c in costs if c is not None) if priced else None,
        "cost_per_run": _mean([c for c in costs if c is not None]) if priced else None,
        "unpriced": sorted(m for m in models if m and price_of(m, prices) is None),
        "wall_seconds": sum(r.wall_seconds or 0 for r in records),
        "wall_per_run": _mean([r.wall_seconds or 0 for r in records]),
    }


def by_group(jobs: list[Job], prices: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One ``stats`` per (worker, grader, rubric), sorted, each with its runs' indexes as ``runs_index``."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(group_key(job.record), []).append(index)
    return [
        {**stats([jobs[i].record for i in indexes], prices), "runs_index": indexes}
        for _, indexes in sorted(groups.items())
    ]
