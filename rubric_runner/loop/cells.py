"""A plan's cells: each task x repeat it works on, where its files go, its thread, and the kind of work it is.

A new run's cells are its tasks x ``run.repeats`` on new threads; a follow-up turn's is the one task it
continues, on that task's thread; a regrade's are the transcripts of the run it grades again, each with its
task and thread as they ran. Every cell's files go in ``tasks/<id>-r<k>/`` of the run dir.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from ..records import TaskRecord, read_task_at, task_dir, task_key, transcript_dirs
from ..tasks.sets import Task
from .followup import FollowUp
from .request import Regrading


@dataclass(frozen=True)
class Cell:
    """One task x repeat of a plan: run afresh, continued by a follow-up turn (``turn``), or its transcript in
    ``graded`` graded again (a regrade)."""

    task: Task
    repeat: int
    dir: Path
    """Where its files go: ``tasks/<id>-r<k>/`` in the run dir."""
    thread_id: str
    """The thread it runs on (a regrade's: the one the transcript ran on, or none)."""
    turn: FollowUp | None = None
    graded: Path | None = None
    """A regrade's: the record dir of the transcript graded again."""
    ran: TaskRecord | None = None
    """A regrade's: the task record of the transcript graded again, as the run left it."""


def new_cells(tasks: list[Task], repeats: int, run_dir: Path, base_thread: str | None) -> list[Cell]:
    """Each task x repeat on a new thread: ``base_thread`` (with the task's key when there are several), else a
    fresh id."""
    keys = [(task, repeat) for task in tasks for repeat in range(repeats)]

    def thread(task: Task, repeat: int) -> str:
        if not base_thread:
            return uuid.uuid4().hex
        return base_thread if len(keys) == 1 else f"{base_thread}:{task_key(task.id, repeat)}"

    return [Cell(task, repeat, task_dir(run_dir, task.id, repeat), thread(task, repeat)) for task, repeat in keys]


def turn_cell(turn: FollowUp, task: Task, run_dir: Path) -> Cell:
    """A follow-up turn's one cell: the task it continues (``FollowUp.task``), on that task's thread."""
    repeat = turn.repeat or 0
    return Cell(task, repeat, task_dir(run_dir, task.id, repeat), turn.thread_id, turn=turn)


def regraded_cells(regrading: Regrading, tasks: list[Task], run_dir: Path) -> list[Cell]:
    """A regrade's cells: each transcript of the run in ``regrading.source``, with the task (as the config
    gives it now), repeat and thread it ran with, graded into its task's dir in ``run_dir``."""
    cells = []
    for graded in transcript_dirs(regrading.source):
        original = read_task_at(graded) or TaskRecord()
        task = next((t for t in tasks if t.id == original.task_id), tasks[0])
        repeat = original.repeat or 0
        target = (run_dir / graded.relative_to(regrading.source) if graded != regrading.source
                  else task_dir(run_dir, original.task_id, repeat))  # a version 1 or 2 run of one task
        cells.append(Cell(task, repeat, target, original.thread_id or "", graded=graded, ran=original))
    return cells
