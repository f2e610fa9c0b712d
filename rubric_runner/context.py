"""Which task the current coroutine or thread works on.

One agent serves every task of a run; what differs per task travels in this
context variable: tool settings for the task, the repeat index (part of the
response-cache key), the recorder that keeps the task's record and the notes
its grading passes leave (``grading.TaskGrading``).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskContext:
    """What code deep inside the agent needs to know about the task it serves."""

    task_id: str
    repeat: int = 0
    tool_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    recorder: Any = None
    grading: Any = None

    def ref(self) -> TaskRef:
        """Which task, repeat and run this is, for code outside the runner."""
        record = getattr(self.recorder, "result", None)
        return TaskRef(self.task_id, self.repeat, getattr(record, "run_dir", None), getattr(record, "thread_id", None))


@dataclass(frozen=True)
class TaskRef:
    """Which task a grading pass belongs to: its id, repeat, record's dir and conversation thread."""

    task_id: str
    repeat: int
    run_dir: str | None
    thread_id: str | None


CURRENT_TASK: ContextVar[TaskContext | None] = ContextVar("rubric_runner_task", default=None)


def current_task() -> TaskContext | None:
    """The task being worked on here, if any."""
    return CURRENT_TASK.get()
