"""Judgements straight from (header, task record) pairs: the figures of ``analysis.judge`` on records a
test builds by hand, without a run dir for ``report.runs`` to read."""

from __future__ import annotations

from collections.abc import Iterable

from rubric_runner.analysis.judge import Judged, Judgement, judge_all, one_pass
from rubric_runner.analysis.prices import billed, cost_of
from rubric_runner.records import RunHeader, TaskRecord

Task = tuple[RunHeader, TaskRecord]


def judged(task: Task, prices: dict[str, dict[str, float]]) -> Judged:
    """What a judgement reads of a task: its run's header (who ran it) and its record."""
    header, record = task
    final = record.verification.final if record.verification else None
    return Judged(
        status=record.status, verified_first=record.verified("first"), verified_final=record.verified("final"),
        verified_outcome=final.outcome if final else None, tokens=record.tokens(),
        cost=cost_of(billed(header, record.usage), prices), task=record.task_id or record.task,
        transcript=record.regraded_from or record.run_dir,
        unverified=bool(record.evaluations) and record.evaluations[-1].unverified, one_pass=one_pass(header),
    )


def judge(tasks: Iterable[Task], prices: dict[str, dict[str, float]]) -> Judgement | None:
    """The judgement of ``tasks``; None when none of them was verified."""
    return judge_all([judged(task, prices) for task in tasks])
