"""A task's limits and its run's budgets, enforced at every model call the task makes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphBubbleUp

from ..config.schema import LimitsConfig
from ..observe.recorder import GRADER_METADATA_KEY
from ..records import LimitHit, RunRecord, Status
from .budgets import Budgets


class LimitExceeded(GraphBubbleUp):
    """A task reached a limit or a budget: ``status`` is how it ends, ``hit`` which limit and the figure.

    It bubbles up through the agent graph as an interrupt does: no tool error handler and no grader-error
    capture in RubricMiddleware records it as a failure, and the last checkpoint stays before the refused
    step, so a resumed task takes that step then (nothing is done twice).
    """

    def __init__(self, status: Status, hit: LimitHit) -> None:
        super().__init__(f"{hit.name} reached: {hit.value:g} of {hit.limit:g}")
        self.status, self.hit = status, hit


class TaskGuard(BaseCallbackHandler):
    """One task's guard, handed each model call (worker, subagent or grader) by ``TaskCallback``: before the
    call it checks the task's ``limits.*`` and the run's budgets and refuses the call past one with
    ``LimitExceeded``; after it, it books the task's spend. It is handed each call after the task's
    ``Recorder``, whose counts it reads.

    The first refusal is kept in ``stopped`` and every later call of the task is refused too.
    """

    def __init__(self, limits: LimitsConfig, budgets: Budgets, result: RunRecord, task_dir: Path) -> None:
        self.limits = limits
        self.budgets = budgets
        self.result = result
        self.task_dir = task_dir
        worker = result.usage["worker"]
        self.worker_calls = worker.calls + worker.cached_calls  # a resumed task's earlier calls count
        self.started = time.monotonic()
        self.stopped: LimitExceeded | None = None
        self._lock = threading.Lock()

    def _limit_reached(self, worker: bool) -> LimitHit | None:
        usage = self.result.usage
        worker_tokens = usage["worker"].total_tokens
        checks = [("total_tokens", worker_tokens + usage["grader"].total_tokens)]
        if worker:  # the worker's own limits leave the grader free to grade what the worker did
            checks = [("worker_calls", self.worker_calls), ("worker_tokens", worker_tokens), *checks]
        for name, value in checks:
            limit = getattr(self.limits, name)
            if limit is not None and value >= limit:
                return LimitHit(name=f"limits.{name}", limit=limit, value=value)
        return None

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        worker = GRADER_METADATA_KEY not in (metadata or {})
        with self._lock:
            if self.stopped is None:
                hit = self._limit_reached(worker)
                if hit is not None:
                    self.stopped = LimitExceeded(Status.LIMIT_EXCEEDED, hit)
                elif (hit := self.budgets.reached()) is not None:
                    self.stopped = LimitExceeded(Status.BUDGET_EXCEEDED, hit)
                elif worker:
                    self.worker_calls += 1
            stopped = self.stopped
        if stopped is not None:
            raise LimitExceeded(stopped.status, stopped.hit)

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        self.budgets.book(self.result, self.task_dir)

    def expire(self) -> LimitExceeded:
        """The task's wall-clock deadline (``limits.wall_seconds``) passed: how it ends."""
        hit = LimitHit(name="limits.wall_seconds", limit=self.limits.wall_seconds, value=round(time.monotonic() - self.started, 3))
        with self._lock:
            self.stopped = LimitExceeded(Status.LIMIT_EXCEEDED, hit)
        return self.stopped
