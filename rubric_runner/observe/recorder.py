"""Turns model, tool and grading callbacks into events, usage counts and a console trail."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import (
    BaseCallbackHandler,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.messages import AIMessage, ToolMessage

from ..compat.deepagents import GRADER_METADATA_KEY
from ..records import Evaluation, TaskRecord
from .console import Console
from .otel import task_spans

TOOL_REFUSED = "rubric_runner_tool_refused"
"""The custom callback event ``ToolCallWatch`` sends for each call the model was refused."""


def preview(value: Any, limit: int) -> str:
    """A bounded, single-string preview of a tool input or output."""
    if isinstance(value, ToolMessage):
        value = value.content
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...(+{len(text) - limit} chars)"


def _refusal(request: Any, answer: Any) -> dict[str, Any]:
    call = request.tool_call
    return {"tool": call["name"], "args": call.get("args"), "told": answer.content if isinstance(answer, ToolMessage) else answer}


class ToolCallWatch(AgentMiddleware):
    """Has every tool call answered, and reports each call to a tool the agent was not given, with what
    the model was told (the grading pass reports a verdict that breaks its schema the same way).

    Any ``wrap_tool_call`` gives an agent a tool node, even one without tools (a grader whose evidence
    tools were all removed), so a call to a missing tool is answered (``Error: X is not a valid tool,
    try one of [...]``) instead of being left unanswered.
    """

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        answer = handler(request)
        if request.tool is None:
            dispatch_custom_event(TOOL_REFUSED, _refusal(request, answer))
        return answer

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        answer = await handler(request)
        if request.tool is None:
            await adispatch_custom_event(TOOL_REFUSED, _refusal(request, answer))
        return answer


def sandbox_notices(log: Any, console: Console):
    """``notify`` for the sandbox's isolation setting: every notice in events.jsonl, each kind once on the console."""
    said: set[str] = set()
    lock = threading.Lock()

    def notify(event: str, message: str) -> None:
        log.warning(event, message=message)
        with lock:
            first = event not in said
            said.add(event)
        if first:
            console.warning(message)

    return notify


class Recorder(BaseCallbackHandler):
    """Records one run: tool calls and token usage by agent, grading events, evaluations."""

    run_inline = True  # cheap and thread-safe: no need for an executor hop in async runs
    ignore_chain = ignore_retriever = True  # model, tool (``ignore_agent`` gates those) and custom events only

    def __init__(self, log: Any, result: TaskRecord, console: Console, preview_chars: int) -> None:
        self.log = log
        self.result = result
        self.console = console
        self.preview_chars = preview_chars
        self._lock = threading.Lock()
        self._agents: dict[UUID, str] = {}
        self._tools: dict[UUID, tuple[str, str, float]] = {}
        self.attempt: str | None = None
        """The worker's latest answer (a reply without tool calls): what the next grading pass sees."""
        self.spans = task_spans(result)
        """The task's OpenTelemetry spans, while ``OTEL_*`` asks for traces (``observe.otel``)."""

    @staticmethod
    def _agent(metadata: dict[str, Any] | None) -> str:
        return "grader" if GRADER_METADATA_KEY in (metadata or {}) else "worker"

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        agent = self._agent(metadata)
        with self._lock:
            self._agents[run_id] = agent
        self.log.info("model_call_start", agent=agent)
        if self.spans is not None:
            self.spans.model_started(run_id, agent, metadata, messages)
        self.console.model_call_started(run_id, agent)

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        self.console.model_call_ended(run_id)
        with self._lock:
            agent = self._agents.pop(run_id, "worker")
            generation = response.generations[0][0] if response.generations and response.generations[0] else None
            message = getattr(generation, "message", None)
            usage = getattr(message, "usage_metadata", None)
            cached = bool(getattr(message, "response_metadata", {}).get("cache_hit"))
            self.result.usage[agent].add(usage, cached=cached)
            if agent == "worker" and isinstance(message, AIMessage) and not message.tool_calls:
                self.attempt = str(message.text)
        self.log.info("token_usage", agent=agent, cache_hit=cached, **(usage or {}))
        if self.spans is not None:
            self.spans.model_ended(run_id, message, usage, cached)

    def forget_calls(self) -> None:
        """The task is over: calls that started but never ended (refused by a limit, cut off) leave the live line."""
        with self._lock:
            unfinished, self._agents = list(self._agents), {}
        for run_id in unfinished:
            self.console.model_call_ended(run_id)
        if self.spans is not None:
            self.spans.end()

    def on_llm_error(self, error, *, run_id, **kwargs) -> None:
        self.console.model_call_ended(run_id)
        with self._lock:
            agent = self._agents.pop(run_id, "worker")
        self.log.warning("model_error", agent=agent, error_type=type(error).__name__, error=str(error))
        if self.spans is not None:
            self.spans.failed(run_id, error)

    def on_tool_start(self, serialized, input_str, *, run_id, metadata=None, inputs=None, **kwargs) -> None:
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        agent = self._agent(metadata)
        with self._lock:
            self._tools[run_id] = (name, agent, time.monotonic())
        if self.spans is not None:
            self.spans.tool_started(run_id, agent, name)
        self.log.info(
            "tool_call_start",
            agent=agent,
            tool=name,
            input=preview(inputs if inputs is not None else input_str, self.preview_chars),
        )

    def on_tool_end(self, output, *, run_id, **kwargs) -> None:
        with self._lock:
            name, agent, started = self._tools.pop(run_id, ("tool", "worker", time.monotonic()))
        shown = preview(output, self.preview_chars)
        self.log.info(
            "tool_call_end", agent=agent, tool=name, output=shown, seconds=round(time.monotonic() - started, 3)
        )
        self.console.tool(agent, name, shown)
        if self.spans is not None:
            self.spans.tool_ended(run_id)

    def on_tool_error(self, error, *, run_id, **kwargs) -> None:
        with self._lock:
            name, agent, _ = self._tools.pop(run_id, ("tool", "worker", 0.0))
        self.log.warning("tool_call_error", agent=agent, tool=name, error_type=type(error).__name__, error=str(error))
        self.console.tool(agent, name, f"error: {error}")
        if self.spans is not None:
            self.spans.failed(run_id, error)

    def on_custom_event(self, name, data, *, run_id, metadata=None, **kwargs) -> None:
        """``ToolCallWatch``'s report of a refused call: the call and what the model was told."""
        if name != TOOL_REFUSED:
            return
        agent = self._agent(metadata)
        told = preview(data["told"], self.preview_chars)
        self.log.warning("tool_call_refused", agent=agent, tool=data["tool"], input=preview(data["args"], self.preview_chars), told=told)
        self.console.tool(agent, data["tool"], f"refused: {told}")

    def on_stream_event(self, event: dict[str, Any]) -> None:
        """A custom event from the middleware's stream (``rubric_evaluation_*``)."""
        payload = {key: value for key, value in event.items() if key != "type"}
        self.log.info(event.get("type", "custom_event"), **payload)
        if event.get("type") == "rubric_evaluation_start":
            if self.attempt is not None:
                self.console.attempt(self.attempt)
                self.attempt = None
            self.console.grading_started(event["iteration"])
        elif event.get("type") == "rubric_evaluation_end":
            self.console.verdict(event)

    def on_evaluation(self, evaluation: dict[str, Any]) -> None:
        """``RubricMiddleware(on_evaluation=...)``: keep every evaluation for the record."""
        with self._lock:
            self.result.evaluations.append(Evaluation.model_validate(evaluation))
            self.result.grading_run_id = evaluation.get("grading_run_id")
            self.result.iterations = len(self.result.evaluations)
        if self.spans is not None:
            self.spans.evaluated(evaluation)
