"""Turns model calls, tool calls and grading events into events, usage counts and a console trail.

No callback rides on the agent's graph: a handler on every step of it costs more than the task's own
work. The plan's models carry ``TaskCallback``s, which hand each model call to the task at hand; the
worker's and the grader's ``ToolCallWatch`` middleware report each of their tool calls to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from uuid import UUID, uuid4

from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage

from ..compat.deepagents import GRADER_METADATA_KEY
from ..context import current_task
from ..models.replies import flags, unfinished
from ..records import Evaluation, FlaggedReply, TaskRecord, ToolOutputCut
from .console import Console
from .otel import task_spans

FLAG_EVENTS = {"incomplete": "reply_incomplete", "refusal": "model_refusal", "invalid_tool_call": "invalid_tool_call"}
"""The event each kind of flagged reply (``models.replies.flags``) is logged as."""
FLAG_LINES = {"incomplete": "reply cut before its finish, not taken", "refusal": "refused",
              "invalid_tool_call": "tool call with arguments that do not parse"}


class ToolError(Exception):
    """A tool call the tool node answered with an error instead of a result (arguments the tool refused): what
    the model was told."""


def preview(value: Any, limit: int) -> str:
    """A bounded, single-string preview of a tool input or output."""
    if isinstance(value, ToolMessage):
        value = value.content
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...(+{len(text) - limit} chars)"


def capped(answer: Any, limit: int) -> tuple[Any, int | None]:
    """``answer`` with its text cut to ``limit`` characters and a note saying how much was left out, and the
    text's length when it was cut."""
    if not isinstance(answer, ToolMessage) or not isinstance(answer.content, str) or len(answer.content) <= limit:
        return answer, None
    chars = len(answer.content)
    note = f"\n[tool output cut: {chars - limit} of {chars} characters left out (run.tool_output_chars={limit})]"
    return answer.model_copy(update={"content": answer.content[:limit] + note}), chars


def _refusal(call: dict[str, Any], answer: Any) -> dict[str, Any]:
    """A tool call the model was refused, and what it was told."""
    return {"tool": call["name"], "args": call.get("args"), "told": answer.content if isinstance(answer, ToolMessage) else answer}


class TaskCallback(BaseCallbackHandler):
    """A model's callback that hands each of its calls to the handler ``part`` (``recorder``, ``guard``) of
    the task at hand: the model's own, so it fires for the model's calls only, wherever in the agent
    (worker, subagent, grader). Outside any task it does nothing."""

    run_inline = True

    def __init__(self, part: Literal["recorder", "guard"], raise_error: bool = False) -> None:
        self.part = part
        self.raise_error = raise_error

    def _handler(self) -> BaseCallbackHandler | None:
        task = current_task()
        return getattr(task, self.part) if task is not None else None

    def on_chat_model_start(self, serialized, messages, **kwargs) -> None:
        if (handler := self._handler()) is not None:
            handler.on_chat_model_start(serialized, messages, **kwargs)

    def on_llm_end(self, response, **kwargs) -> None:
        if (handler := self._handler()) is not None:
            handler.on_llm_end(response, **kwargs)

    def on_llm_error(self, error, **kwargs) -> None:
        if (handler := self._handler()) is not None:
            handler.on_llm_error(error, **kwargs)


class ToolCallWatch(AgentMiddleware):
    """Reports each tool call of its ``agent`` to the task's recorder, and has every call answered: a call
    to a tool the agent was not given is reported as refused, with what the model was told (the grading
    pass reports a verdict that breaks its schema the same way). An answer longer than ``output_chars``
    is cut (``capped``), and the cut recorded; a tool that raises is noted on the grading at hand, whose
    ``grader_error`` then names it.

    Any ``wrap_tool_call`` gives an agent a tool node, even one without tools (a grader whose evidence
    tools were all removed), so a call to a missing tool is answered (``Error: X is not a valid tool,
    try one of [...]``) instead of being left unanswered.
    """

    def __init__(self, agent: str, output_chars: int) -> None:
        super().__init__()
        self.agent = agent
        self.output_chars = output_chars

    def _started(self, request: Any) -> tuple[Recorder | None, Any]:
        task = current_task()
        recorder = task.recorder if task is not None else None
        if recorder is None or request.tool is None:
            return recorder, None
        return recorder, recorder.tool_started(self.agent, request.tool_call)

    def _ended(self, recorder: Recorder | None, call: Any, request: Any, answer: Any) -> Any:
        answer, chars = capped(answer, self.output_chars)
        if recorder is None:
            return answer
        if call is None:
            recorder.refused(self.agent, _refusal(request.tool_call, answer))
            return answer
        if chars is not None:
            recorder.output_cut(call, chars, self.output_chars)
        recorder.tool_ended(call, answer)
        return answer

    def _failed(self, recorder: Recorder | None, call: Any, exc: Exception) -> None:
        if recorder is None or call is None:
            return
        recorder.tool_failed(call, exc)
        task = current_task()
        if self.agent == "grader" and task is not None and task.grading is not None:
            task.grading.tool_failed(call[1], exc)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        recorder, call = self._started(request)
        try:
            answer = handler(request)
        except Exception as exc:
            self._failed(recorder, call, exc)
            raise
        return self._ended(recorder, call, request, answer)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        recorder, call = self._started(request)
        try:
            answer = await handler(request)
        except Exception as exc:
            self._failed(recorder, call, exc)
            raise
        return self._ended(recorder, call, request, answer)


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
    """Records one task: model and tool calls and token usage by agent, grading events, evaluations (its
    model calls come through ``TaskCallback``, its tool calls from ``ToolCallWatch``)."""

    def __init__(self, log: Any, result: TaskRecord, console: Console, preview_chars: int) -> None:
        self.log = log
        self.result = result
        self.console = console
        self.preview_chars = preview_chars
        self._lock = threading.Lock()
        self._agents: dict[UUID, str] = {}
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
            flagged = flags(message)
            for kind, detail in flagged:
                self.result.flagged_replies.append(FlaggedReply(agent=agent, kind=kind, detail=preview(detail, self.preview_chars)))
            if agent == "worker" and isinstance(message, AIMessage) and not message.tool_calls and not unfinished(message):
                self.attempt = str(message.text)
        self.log.info("token_usage", agent=agent, cache_hit=cached, **(usage or {}))
        for kind, detail in flagged:
            shown = preview(detail, self.preview_chars)
            self.log.warning(FLAG_EVENTS[kind], agent=agent, detail=shown)
            self.console.line(f"   ! {agent} {FLAG_LINES[kind]}: {shown}")
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

    def tool_started(self, agent: str, call: dict[str, Any]) -> tuple[UUID, str, str, float]:
        """A tool call of ``agent`` begins; returns what ``tool_ended`` or ``tool_failed`` is given."""
        run_id, name = uuid4(), call["name"]
        if self.spans is not None:
            self.spans.tool_started(run_id, agent, name)
        self.log.info("tool_call_start", agent=agent, tool=name, input=preview(call.get("args"), self.preview_chars))
        return run_id, name, agent, time.monotonic()

    def tool_ended(self, call: tuple[UUID, str, str, float], answer: Any) -> None:
        """The tool answered (an answer with ``status="error"``: the tool failed, and the model was told why)."""
        run_id, name, agent, started = call
        if isinstance(answer, ToolMessage) and answer.status == "error":
            self.tool_failed(call, ToolError(answer.content))
            return
        shown = preview(answer, self.preview_chars)
        self.log.info("tool_call_end", agent=agent, tool=name, output=shown, seconds=round(time.monotonic() - started, 3))
        self.console.tool(agent, name, shown)
        if self.spans is not None:
            self.spans.tool_ended(run_id)

    def output_cut(self, call: tuple[UUID, str, str, float], chars: int, kept: int) -> None:
        """The tool's answer of ``chars`` characters was cut to ``kept`` before its model read it."""
        _, name, agent, _ = call
        with self._lock:
            self.result.tool_outputs_cut.append(ToolOutputCut(agent=agent, tool=name, chars=chars, kept=kept))
        self.log.warning("tool_output_cut", agent=agent, tool=name, chars=chars, kept=kept)
        self.console.line(f"   ! {name} answered {chars} characters: cut to {kept} (run.tool_output_chars)")

    def tool_failed(self, call: tuple[UUID, str, str, float], error: BaseException) -> None:
        """The tool raised ``error``, or was answered with it (``ToolError``)."""
        run_id, name, agent, _ = call
        self.log.warning("tool_call_error", agent=agent, tool=name, error_type=type(error).__name__, error=str(error))
        self.console.tool(agent, name, f"error: {error}")
        if self.spans is not None:
            self.spans.failed(run_id, error)

    def refused(self, agent: str, data: dict[str, Any]) -> None:
        """A call the model was refused (``_refusal``): the call and what the model was told."""
        told = preview(data["told"], self.preview_chars)
        self.log.warning("tool_call_refused", agent=agent, tool=data["tool"], input=preview(data["args"], self.preview_chars), told=told)
        self.console.tool(agent, data["tool"], f"refused: {told}")

    def stream_event(self, event: dict[str, Any]) -> None:
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
        elif event.get("type") == "loop_returned":
            self.console.line(event.get("why", ""))

    def on_evaluation(self, evaluation: dict[str, Any]) -> None:
        """``RubricMiddleware(on_evaluation=...)``: keep every evaluation for the record."""
        with self._lock:
            self.result.evaluations.append(Evaluation.model_validate(evaluation))
            self.result.grading_run_id = evaluation.get("grading_run_id")
            self.result.iterations = len(self.result.evaluations)
        if self.spans is not None:
            self.spans.evaluated(evaluation)
