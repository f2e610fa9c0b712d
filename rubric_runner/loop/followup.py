"""Follow-up turns: a new human message on a finished run's thread, each turn with its own record.

A task's dir (``tasks/<id>-r<k>/``; the run dir itself for a version 1 or 2 run of one task) holds the
first turn; ``turns/<n>/`` below it holds turn n (2, 3, ...), a run of its own: its ``result.json``,
``events.jsonl`` and ``.hydra/``, and the turn's task in ``tasks/<id>-r<k>/``. The thread's checkpoints
(and a scripted model's place in its script) stay in the run dir the thread started in, its ``home``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..config.schema import Checkpointer, Config
from ..errors import UsageError
from ..records import (
    RESULT_FILE,
    Status,
    TaskRecord,
    listed_task_dirs,
    read_task_at,
    task_dir,
    task_key,
    thread_home,
    turn_dir,
    turn_dirs,
    turn_number,
    turn_root,
)
from ..tasks.sets import Task


@dataclass(frozen=True)
class FollowUp:
    """A turn that continues a thread: its message and number, the turn before, where the thread lives."""

    message: str
    number: int
    previous: Path
    """The record dir of the turn this one continues."""
    home: Path
    """The run dir that holds the thread's checkpoints."""
    thread_id: str
    previous_rubric: str | None
    grading_run_id: str | None
    """The grading run of the turn before."""
    task_id: str | None = None
    repeat: int | None = None

    def task(self, tasks: list[Task]) -> Task:
        """The run's task this turn continues, asked ``message`` instead, with the rubric, tool settings and
        hidden checks it has now. A version 1 or 2 run of one task names no task: its task is the one its
        config gives (a message, or a dataset of one row)."""
        if self.task_id is None:
            if len(tasks) != 1:
                raise UsageError("RUN_DIR", f"the run had one task; its config now gives {len(tasks)}",
                                 "continue with the config the run had")
            return replace(tasks[0], message=self.message)
        found = next((task for task in tasks if task.id == self.task_id), None)
        if found is None:
            raise UsageError("--task", f"the run's tasks have no {self.task_id!r} any more", "continue with the config the run had")
        return replace(found, message=self.message)

    def carries_over(self, rubric: str) -> bool:
        """Whether ``rubric`` is the one in effect on the thread (then it is not sent again)."""
        return rubric == self.previous_rubric

    def dir(self) -> Path:
        """Where this turn's record goes."""
        return turn_dir(turn_root(self.previous), self.number)


def record_dir_of(run_dir: Path, task_id: str | None, repeat: int) -> Path:
    """The dir of the task x repeat a follow-up continues (``task_id`` None: the run's one task)."""
    found = [path for path in listed_task_dirs(run_dir) if (path / RESULT_FILE).is_file()]
    tasks = [path.name for path in found]
    if not found:  # a version 1 or 2 run of one task: its record is the run's own
        inline = read_task_at(run_dir)
        if task_id is not None and inline is not None and task_id != inline.task_id:
            raise UsageError("--task", f"{run_dir} ran one task, not {task_id!r}", "leave out --task")
        return run_dir
    if task_id is None:
        if len(found) == 1:
            return found[0]
        raise UsageError("--task", f"{run_dir} ran {len(tasks)} tasks", f"name the task to continue, one of: {', '.join(tasks)}")
    if task_key(task_id, repeat) not in tasks:
        raise UsageError("--task", f"{run_dir} has no task {task_id!r} (repeat {repeat})", f"one of: {', '.join(tasks)}")
    return task_dir(run_dir, task_id, repeat)


def next_turn(record_dir: Path, message: str) -> FollowUp:
    """The turn after the latest one on ``record_dir``'s thread; that turn must have ended with a verdict."""
    latest = ([record_dir, *turn_dirs(record_dir)])[-1]
    record = read_task_at(latest)
    if record is None:
        raise UsageError("RUN_DIR", f"{latest} holds no record of a run", "continue a run that ended with a verdict")
    if not record.status.terminal:
        fix = (f"resume it first: rubric-runner resume {latest}" if record.status in (Status.INTERRUPTED, Status.ERROR)
               else "continue a run that ended with a verdict")
        raise UsageError("RUN_DIR", f"the latest turn ({latest}) is {record.status}, not finished with a verdict", fix)
    if not record.thread_id:
        raise UsageError("RUN_DIR", f"{latest} names no thread", "continue a run that ended with a verdict")
    return FollowUp(message, turn_number(latest) + 1, latest, thread_home(record_dir), record.thread_id, record.rubric,
                    record.grading_run_id, record.task_id, record.repeat)


def resumed_turn(record_dir: Path, record: TaskRecord) -> FollowUp:
    """The follow-up an interrupted turn's task record (in ``record_dir``) describes, to resume it."""
    number = turn_number(record_dir)
    previous = turn_root(record_dir) if number == 2 else turn_dir(turn_root(record_dir), number - 1)
    before = read_task_at(previous)
    return FollowUp(record.task or "", number, previous, thread_home(record_dir), record.thread_id or "",
                    before and before.rubric, before and before.grading_run_id, record.task_id, record.repeat)


def check_thread_kept(config: Config) -> None:
    """A follow-up needs the thread's checkpoints: not in memory, which ended with the run."""
    if config.run.checkpointer == Checkpointer.memory:
        raise UsageError("run.checkpointer", "memory checkpoints end with their run: there is no thread to continue",
                         "continue a run that used sqlite or postgres checkpoints")
