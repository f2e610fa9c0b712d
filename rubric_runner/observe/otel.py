"""OpenTelemetry traces of runs, following the GenAI semantic conventions, sent over OTLP/HTTP.

On when the standard variables ask for it: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``)
is set, or ``OTEL_TRACES_EXPORTER`` names ``otlp``; off with ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none``. The exporter reads the other ``OTEL_EXPORTER_OTLP_*`` variables (headers,
timeout) and ``OTEL_SERVICE_NAME`` as the SDK does. Message content is sent only with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, redacted as every file a run writes is.

Each task is a span (``invoke_agent``), each model call a ``chat`` span and each tool call an
``execute_tool`` span under it, and each grading pass an ``invoke_agent grader`` span whose
``gen_ai.evaluation.result`` events give every criterion's verdict (and one for the whole rubric).
The task span ends with the agent's work on the task; its record says how the task ended.
Needs the ``otel`` extra; without it, a run says so once and goes on untraced.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any
from uuid import UUID

from ..redaction import redact

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SERVICE = "rubric_runner"
EVALUATION_EVENT = "gen_ai.evaluation.result"

_lock = threading.Lock()
_provider: Any = None
_warned = False


def enabled() -> bool:
    """Whether the ``OTEL_*`` variables ask for traces over OTLP."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()}
    if "none" in exporters:
        return False
    return "otlp" in exporters or bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _capture() -> bool:
    return os.environ.get(CAPTURE, "").strip().lower() in ("true", "1")


def tracer() -> Any:
    """The process's tracer, its provider set up once (batching, flushed at exit); None when traces are off
    or the ``otel`` extra is missing (said once on stderr)."""
    global _provider, _warned
    if not enabled():
        return None
    with _lock:
        if _provider is None:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
                from opentelemetry.sdk.resources import Resource
                from opentelemetry.sdk.trace import TracerProvider
                from opentelemetry.sdk.trace.export import BatchSpanProcessor
            except ImportError:
                if not _warned:
                    _warned = True
                    print("warning: OpenTelemetry traces are asked for (OTEL_*) but the otel extra is missing: "
                          "pip install 'rubric_runner[otel]'", file=sys.stderr)
                return None
            resource = Resource.create({} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE})
            _provider = TracerProvider(resource=resource)
            _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return _provider.get_tracer("rubric_runner")


def flush() -> None:
    """Send the spans waiting in the batch now."""
    if _provider is not None:
        _provider.force_flush()


def _provider_name(metadata: dict[str, Any]) -> str:
    return str(metadata.get("ls_provider") or "unknown")


def _messages(messages: Any) -> str:
    """Messages as the GenAI conventions' ``gen_ai.*.messages`` JSON, redacted."""
    out = []
    for message in messages or []:
        role = {"human": "user", "ai": "assistant"}.get(getattr(message, "type", ""), getattr(message, "type", "user"))
        text = message.text if hasattr(message, "text") else str(message)
        out.append({"role": role, "parts": [{"type": "text", "content": redact(str(text))}]})
    return json.dumps(out)


class TaskSpans:
    """The spans of one task: the task's, and under it its model calls, tool calls and grading passes."""

    def __init__(self, tracer: Any, record: Any) -> None:
        from opentelemetry import trace

        self._trace, self.tracer, self.record = trace, tracer, record
        self._lock = threading.Lock()
        self._open: dict[UUID, Any] = {}
        self._grading: Any = None
        self.ended = False
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker",
                      "rubric_runner.task.id": record.task_id or "task", "rubric_runner.task.repeat": record.repeat or 0}
        if record.thread_id:
            attributes["gen_ai.conversation.id"] = record.thread_id
        self.task = tracer.start_span(f"invoke_agent {record.task_id or 'task'}", attributes=attributes)

    def _parent(self, agent: str) -> Any:
        """The context of a call: a grader's opens its grading pass's span (the pass begins with its first call)."""
        if agent != "grader":
            return self._trace.set_span_in_context(self.task)
        with self._lock:
            if self._grading is None:
                self._grading = self._start_grading()
            return self._trace.set_span_in_context(self._grading)

    def _start_grading(self) -> Any:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "grader"}
        return self.tracer.start_span("invoke_agent grader", context=self._trace.set_span_in_context(self.task), attributes=attributes)

    def model_started(self, run_id: UUID, agent: str, metadata: dict[str, Any] | None, messages: Any) -> None:
        metadata = metadata or {}
        model = str(metadata.get("ls_model_name") or "unknown")
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": _provider_name(metadata),
                      "gen_ai.request.model": model, "rubric_runner.agent": agent}
        if _capture():
            attributes["gen_ai.input.messages"] = _messages(messages[0] if messages else [])
        context = self._parent(agent)
        with self._lock:
            self._open[run_id] = self.tracer.start_span(f"chat {model}", context=context, attributes=attributes)

    def model_ended(self, run_id: UUID, message: Any, usage: dict[str, Any] | None, cached: bool) -> None:
        with self._lock:
            span = self._open.pop(run_id, None)
        if span is None:
            return
        metadata = getattr(message, "response_metadata", None) or {}
        if metadata.get("model_name"):
            span.set_attribute("gen_ai.response.model", str(metadata["model_name"]))
        reason = metadata.get("finish_reason") or metadata.get("stop_reason")
        if reason:
            span.set_attribute("gen_ai.response.finish_reasons", [str(reason)])
        span.set_attribute("gen_ai.usage.input_tokens", int((usage or {}).get("input_tokens") or 0))
        span.set_attribute("gen_ai.usage.output_tokens", int((usage or {}).get("output_tokens") or 0))
        span.set_attribute("rubric_runner.cache_hit", cached)
        if _capture() and message is not None:
            span.set_attribute("gen_ai.output.messages", _messages([message]))
        span.end()

    def failed(self, run_id: UUID, error: BaseException) -> None:
        """A model or tool call that raised."""
        with self._lock:
            span = self._open.pop(run_id, None)
        if span is not None:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(error)[:500]))
            span.end()

    def tool_started(self, run_id: UUID, agent: str, name: str) -> None:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "rubric_runner.agent": agent}
        context = self._parent(agent)
        with self._lock:
            self._open[run_id] = self.tracer.start_span(f"execute_tool {name}", context=context, attributes=attributes)

    def tool_ended(self, run_id: UUID) -> None:
        with self._lock:
            span = self._open.pop(run_id, None)
        if span is not None:
            span.end()

    def evaluated(self, evaluation: dict[str, Any]) -> None:
        """A grading pass ended: its span gets the verdict, and an evaluation event per criterion and one for the rubric."""
        with self._lock:
            span, self._grading = self._grading or self._start_grading(), None
        result = str(evaluation.get("result") or "")
        span.set_attribute("rubric_runner.iteration", int(evaluation.get("iteration") or 0))
        span.set_attribute("rubric_runner.grading_run_id", str(evaluation.get("grading_run_id") or ""))
        span.set_attribute("rubric_runner.verdict", result)
        for criterion in evaluation.get("criteria") or []:
            passed = bool(criterion.get("passed"))
            attributes = {"gen_ai.evaluation.name": str(criterion.get("name") or ""),
                          "gen_ai.evaluation.score.label": "pass" if passed else "fail",
                          "gen_ai.evaluation.score.value": 1.0 if passed else 0.0}
            if criterion.get("gap"):
                attributes["gen_ai.evaluation.explanation"] = redact(str(criterion["gap"]))
            span.add_event(EVALUATION_EVENT, attributes)
        span.add_event(EVALUATION_EVENT, {"gen_ai.evaluation.name": "rubric", "gen_ai.evaluation.score.label": result,
                                          "gen_ai.evaluation.score.value": 1.0 if result == "satisfied" else 0.0,
                                          "gen_ai.evaluation.explanation": redact(str(evaluation.get("explanation") or ""))})
        span.end()

    def end(self) -> None:
        """The task's work is over: calls left open end, then the task's span, with its grading passes and last verdict."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            left, self._open = list(self._open.values()), {}
            grading, self._grading = self._grading, None
        for span in [*left, *([grading] if grading is not None else [])]:
            span.end()
        record = self.record
        self.task.set_attribute("rubric_runner.iterations", len(record.evaluations))
        if record.evaluations:
            self.task.set_attribute("rubric_runner.verdict", record.evaluations[-1].result)
        for role, usage in record.usage.items():
            self.task.set_attribute(f"rubric_runner.{role}.input_tokens", usage.input_tokens)
            self.task.set_attribute(f"rubric_runner.{role}.output_tokens", usage.output_tokens)
        self.task.end()


def task_spans(record: Any) -> TaskSpans | None:
    """The spans of a task of a run, while traces are on; None otherwise (and for a regrade, which has no task's work)."""
    if getattr(record, "regraded_from", None):
        return None
    found = tracer()
    return TaskSpans(found, record) if found is not None else None
