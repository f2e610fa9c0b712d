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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..analysis.views import Pass, Window, window
from ..config.prices import price_of
from ..records import Job, Status, satisfied_rate
from ..records.passk import satisfied_k
from . import configs
from .runs import Run


@dataclass(frozen=True)
class Criterion:
    """One criterion name of a configuration's runs: (met, graded) on their first and on their final graded pass."""

    name: str
    first: tuple[int, int]
    final: tuple[int, int]


def _criteria(runs: list[Run]) -> list[Criterion]:
    """Per criterion name: met on each run's first and final graded pass."""
    table: dict[str, tuple[list[int], list[int]]] = {}
    for run in runs:
        for when, criteria in enumerate(run.criteria or ()):
            for name, passed in criteria:
                counts = table.setdefault(name, ([0, 0], [0, 0]))[when]
                counts[0] += passed
                counts[1] += 1
    return [Criterion(name, (first[0], first[1]), (final[0], final[1])) for name, (first, final) in table.items()]


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


@dataclass(frozen=True)
class Stats:
    """The numbers the reports show for a set of runs (``stats``)."""

    worker: str
    grader: str
    rubric: str
    tasks: int
    k: int | None
    satisfied_at_1: float | None
    satisfied_at_k: float | None
    satisfied_hat_k: float | None
    runs: int
    decided: int
    outside: dict[str, int]
    """The runs outside the rates (unfinished or crashed), by status."""
    satisfied: int
    satisfied_rate: float | None
    mean_passes_to_satisfied: float | None
    passes_to_satisfied: dict[int, int]
    """Satisfied runs by the grading passes they took."""
    max_iterations: int
    outcomes: dict[str, int]
    """The runs by final status."""
    verdicts: dict[str, int]
    """The grading passes by verdict."""
    unverified: int
    window: Window
    criteria: list[Criterion]
    """The criteria table's rows."""
    tokens: dict[str, int]
    tokens_per_run: dict[str, float | None]
    """By role: worker, grader."""
    cost: float | None
    cost_per_run: float | None
    unpriced: list[str]
    """The models the price table has no price for."""
    task_seconds: float
    task_seconds_per_run: float | None


@dataclass(frozen=True)
class Group(Stats):
    """One configuration's ``Stats``, with its number, its key (``configs.group_key``) and its label."""

    group: int
    key: str
    label: str


def _stats(runs: list[Run], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """``Stats``' fields for ``runs``."""
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


def stats(runs: list[Run], prices: dict[str, dict[str, float]]) -> Stats:
    """The numbers the reports show for a set of runs."""
    return Stats(**_stats(runs, prices))


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


def by_group(runs: list[Run], prices: dict[str, dict[str, float]]) -> list[Group]:
    """One ``stats`` per configuration, in the order the jobs came; each with its number (``group``),
    its key and its ``label`` (the keys in which it differs from the others)."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    names = configs.group_labels((key, members[0].job.record.header) for key, members in groups.items())
    return [Group(**_stats(members, prices), group=number, key=key, label=names[key])
            for number, (key, members) in enumerate(groups.items())]


@dataclass(frozen=True)
class Cell:
    """A task's runs by one configuration: those satisfied, those not decided (unfinished or crashed), all of
    them, their worst status, and the configuration's number."""

    satisfied: int
    undone: int
    runs: int
    worst: Status
    group: int


@dataclass(frozen=True)
class TaskRow:
    """A row of the task x configuration matrix: a task, a cell per configuration (None where it did not run
    the task), and the configurations that did not satisfy it in every run they decided."""

    rubric: str
    task: str
    cells: tuple[Cell | None, ...]
    missed_by: tuple[str, ...]


def matrix(runs: list[Run], groups: list[Group]) -> tuple[list[str], list[TaskRow]]:
    """The task x configuration matrix: (column labels, rows), the tasks in the order their first run came."""
    column = {g.key: i for i, g in enumerate(groups)}
    models = [g.label for g in groups]
    counts: dict[tuple[str, str], list[list[Any] | None]] = {}
    for run in runs:
        tallies = counts.setdefault(run.task_key, [None] * len(models))
        i = column[run.group]
        tally = tallies[i] = tallies[i] or [0, 0, 0, Status.SATISFIED]
        tally[0] += run.status is Status.SATISFIED
        tally[1] += not run.status.decided
        tally[2] += 1
        tally[3] = max(tally[3], run.status, key=lambda status: status.severity)
    rows = []
    for (rubric, task), tallies in counts.items():
        cells = tuple(Cell(t[0], t[1], t[2], t[3], groups[i].group) if t else None for i, t in enumerate(tallies))
        missed = tuple(models[i] for i, cell in enumerate(cells) if cell and cell.satisfied + cell.undone < cell.runs)
        rows.append(TaskRow(rubric, task, cells, missed))
    return models, rows
