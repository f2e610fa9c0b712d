"""What the hooks are handed: one frozen event object each, documented field by field.

A record in an event is final: the run changes it no more (an evaluation and a run's record are
copies; a task's record is the one its file holds). A plugin reads it; it must not change it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..context import TaskRef
from ..records import Evaluation, RunHeader, RunRecord, TaskRecord


@dataclass(frozen=True)
class GradingPassed:
    """``on_evaluation(event)``: a grading pass ended."""

    evaluation: Evaluation
    """The pass as it is recorded: its verdict, explanation and criteria, and what the runner noted
    (``unsupported``, ``coverage``, ``grader_said``)."""
    task: TaskRef
    """The task it graded."""


@dataclass(frozen=True)
class TaskEnded:
    """``on_task_end(event)``: a task's record is written, however the task ended."""

    record: TaskRecord
    """The task's record."""
    task: TaskRef
    """The task."""
    run: RunHeader
    """What the run is (its config, models, rubric)."""
    run_dir: str
    """The run's dir."""
    done: int
    """Tasks of the run that have ended so far, this one included (kept ones first)."""
    total: int
    """Tasks of the run: tasks x repeats."""


@dataclass(frozen=True)
class RunEnded:
    """``on_run_end(event)``: a run's record is complete and written, however the run ended."""

    record: RunRecord
    """The run's record."""


__all__ = ["GradingPassed", "RunEnded", "TaskEnded"]
