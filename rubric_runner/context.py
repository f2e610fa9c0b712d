"""The task the current coroutine or thread works on: one typed context, the run's only per-task state.

One agent serves every task of a run; what differs per task travels in this context variable: the task's
own tool settings, its repeat index (part of the response-cache key), the recorder that keeps its record,
the guard that holds it to its limits, and the notes its grading passes leave (``grader.notes``).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TaskRef:
    """Which task something belongs to: its id, repeat, record's dir and conversation thread."""

    task_id: str
    repeat: int
    run_dir: str | None
    thread_id: str | None


@dataclass
class TaskContext:
    """What code deep inside the agent needs to know about the task it serves."""

    ref: TaskRef
    tool_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    recorder: Any = None
    """The task's ``observe.recorder.Recorder``."""
    grading: Any = None
    """The task's ``grader.notes.TaskGrading``."""
    guard: Any = None
    """The task's ``loop.limits.TaskGuard`` (none in a regrade)."""
    workspace: Any = None
    """The task's ``tasks.workspace.Workspace``, when it has one: its seed and protected globs."""
    files_dir: str | None = None
    """On the disk backends (``worker.backend``), the dir of the worker's files; on ``state`` they are in the
    agent's state."""
    workspace_diff_cap: int = 0
    """``rubric.workspace_diff_max_bytes``: the most bytes of a kept workspace diff."""
    earlier_replies: int = 0
    """While a ``resample`` worker call runs: the worker's replies of earlier attempts it was not sent
    (``loop.arms``); the response cache's key and a scripted worker's place in its script count them."""
    shell: Any = None
    """On the ``sandbox`` backend, the task's ``sandbox.ShellSession`` for ``execute``: started on its first
    command, closed when the task ends."""


CURRENT_TASK: ContextVar[TaskContext | None] = ContextVar("rubric_runner_task", default=None)


def current_task() -> TaskContext | None:
    """The task being worked on here, if any."""
    return CURRENT_TASK.get()
