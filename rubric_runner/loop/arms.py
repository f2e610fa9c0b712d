"""The loop's arms (``loop.arm``): the rubric loop and its controls at equal budget.

``rubric`` is RubricMiddleware's loop. ``single`` is that loop with one grading pass. ``resample`` is that
loop with the grader's feedback kept from the worker: each of its model calls is sent the conversation as
it stands since the grader's latest revision request, after the turn's user message (a fresh conversation
per attempt), and the grader reads the same, so each attempt is judged on its own by the same grader, up to
``grader.max_iterations`` attempts, stopping at the first ``satisfied``. The thread keeps every message
(the grader's requests too), so records, resume and regrade read a resample run as any other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage

from ..compat.deepagents import GRADER_SOURCE
from ..config.schema import Config, LoopArm
from ..context import current_task


def grading_passes(config: Config) -> int:
    """The grading passes a task may take: one for ``single``, else ``grader.max_iterations``."""
    return 1 if config.loop.arm is LoopArm.single else config.grader.max_iterations


def _from_grader(message: Any) -> bool:
    return isinstance(message, HumanMessage) and message.name == GRADER_SOURCE


def fresh_attempt(messages: list[Any]) -> tuple[list[Any], int]:
    """``messages`` as a fresh conversation on the latest attempt: without each attempt the grader sent
    back and its revision request (a user's messages and each turn's last attempt stay); and how many
    worker replies that leaves out."""
    kept: list[Any] = []
    start = left_out = 0
    for index, message in enumerate(messages):
        if _from_grader(message):  # the attempt since ``start`` was sent back: it and the request go
            left_out += sum(isinstance(m, AIMessage) for m in messages[start:index])
            start = index + 1
        elif isinstance(message, HumanMessage):
            kept.extend(messages[start:index + 1])
            start = index + 1
    return [*kept, *messages[start:]], left_out


def fresh_for_grader(prepare: Callable[[list[Any]], list[Any]] | None) -> Callable[[list[Any]], list[Any]]:
    """``prepare_messages_for_grader`` for ``resample``: the latest attempt alone, then ``prepare`` (the
    config's own, if any)."""
    def prepared(messages: list[Any]) -> list[Any]:
        fresh = fresh_attempt(messages)[0]
        return prepare(fresh) if prepare is not None else fresh

    return prepared


class FreshAttempts(AgentMiddleware):
    """``resample``'s worker middleware: every model call is sent ``fresh_attempt`` of its messages. The
    replies left out are noted on the task's context while the call runs (``earlier_replies``), so the
    response cache keeps each attempt's reply apart and a scripted worker goes on in its script."""

    @staticmethod
    def _fresh(request: Any) -> tuple[Any, int]:
        messages, left_out = fresh_attempt(request.messages)
        return (request.override(messages=messages) if len(messages) != len(request.messages) else request), left_out

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        fresh, left_out = self._fresh(request)
        task = current_task()
        if task is None:
            return handler(fresh)
        task.earlier_replies = left_out
        try:
            return handler(fresh)
        finally:
            task.earlier_replies = 0

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        fresh, left_out = self._fresh(request)
        task = current_task()
        if task is None:
            return await handler(fresh)
        task.earlier_replies = left_out
        try:
            return await handler(fresh)
        finally:
            task.earlier_replies = 0
