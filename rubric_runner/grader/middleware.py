"""The grader sub-agent's middleware (strategy, evidence check, call cap) and what each pass leaves in the record.

A pass's verdict is checked twice. Its evidence, while the pass runs: a ``satisfied`` verdict, or a
passed criterion that names a grader tool, from a pass that never called that tool is sent back once
with the reason, and noted as unsupported when it comes back the same. Its coverage, when it is
recorded: criteria fewer than the rubric's lines, or ones that match none of them, are flagged.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import StructuredOutputError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ..config.schema import GraderConfig
from ..context import current_task
from ..models.errors import describe_model, failure, fix_for, is_provider_error
from ..models.quirks import ToolCallContent, compatible_server
from ..records import Evaluation, Status
from .strategies import EVIDENCE_SOURCE, GRADER_TOOL, ChosenStrategy, note

SAID_CHARS = 1000
"""How much of what the grader said instead of a verdict the record keeps."""
FIXES = {
    "tool": "try grader.structured_output=named (or auto): the server may ignore or refuse tool_choice=required",
    "provider": "try grader.structured_output=named or json: the server may not take response_format json_schema",
    "named": "try grader.structured_output=json, or a model that supports tool calls",
    "json": "try grader.structured_output=named, or a model that follows JSON instructions",
}
"""The fix to try when a grading pass ends without a verdict, by the strategy that was in use."""
OTHER_STRATEGY = "try another grader.structured_output"


def rubric_lines(text: str) -> list[str]:
    """The rubric's criteria: its non-empty lines without list markers."""
    return [line for line in (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", raw).strip() for raw in text.splitlines()) if line]


def tools_named(text: str, tools: list[str]) -> set[str]:
    """The tools whose names appear in ``text`` as words."""
    return {name for name in tools if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)}


class CallBudget(AgentMiddleware):
    """``grader.max_model_calls``: every model call of a pass counts, re-asks and repairs included
    (each leaves its reply in the pass's messages); the one past the cap raises. It takes the place of
    LangChain's ``ModelCallLimitMiddleware``, under its name: a second cap in ``grader.middleware`` is refused."""

    name = "ModelCallLimitMiddleware"

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def _check(self, request: ModelRequest) -> None:
        calls = sum(isinstance(message, AIMessage) for message in request.messages)
        if calls >= self.limit:
            raise ModelCallLimitExceededError(thread_count=calls, run_count=calls, thread_limit=None, run_limit=self.limit)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        self._check(request)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        self._check(request)
        return await handler(request)


class EvidenceCheck(AgentMiddleware):
    """Sends a verdict back once when it claims what the pass never checked; notes it as unsupported
    when it comes back the same. Notes the provider error that ends a pass, too."""

    def __init__(self, tools: list[str], required: list[str]) -> None:
        super().__init__()
        self.tool_names = tools
        self.required = required

    def missing(self, request: ModelRequest, response: ModelResponse) -> list[str]:
        """The tools the verdict in ``response`` rests on that no tool call of the pass has answered."""
        verdict = response.structured_response
        needed: set[str] = set()
        if verdict.result == "satisfied":
            needed |= set(self.required) | tools_named(_rubric_at_hand(), self.tool_names)
        for criterion in verdict.criteria:
            if criterion["passed"]:
                needed |= tools_named(criterion["name"], self.tool_names)
        called = {
            m.name for m in [*request.messages, *response.result] if isinstance(m, ToolMessage) and m.status != "error"
        }
        return sorted(needed - called)

    def _judge(self, request: ModelRequest, response: ModelResponse) -> ModelRequest | None:
        """None to let the response stand; else the request that sends the verdict back."""
        if response.structured_response is None:
            return None
        missing = self.missing(request, response)
        if not missing:
            return None
        if any(m.additional_kwargs.get("lc_source") == EVIDENCE_SOURCE for m in request.messages):
            note("unsupported", missing)
            return None
        names = ", ".join(missing)
        reason = (
            f"Verdict not accepted: it rests on {names}, which this grading pass never called. "
            f"Call {names} to get the evidence, then return your GraderResponse again."
        )
        note("sent_back", missing)
        return request.override(messages=[*request.messages, *_sent_back(response.result, reason, missing)])

    def _second(self, request: ModelRequest, again: ModelRequest, second: ModelResponse) -> ModelResponse:
        """The sent-back verdict and the reply to it, as one model step; a verdict that comes straight
        back without its evidence is noted."""
        if second.structured_response is not None and (missing := self.missing(again, second)):
            note("unsupported", missing)
        return ModelResponse(result=[*again.messages[len(request.messages):], *second.result], structured_response=second.structured_response)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        try:
            response = handler(request)
            again = self._judge(request, response)
            return response if again is None else self._second(request, again, handler(again))
        except Exception as exc:
            _note_failure(exc)
            raise

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        try:
            response = await handler(request)
            again = self._judge(request, response)
            return response if again is None else self._second(request, again, await handler(again))
        except Exception as exc:
            _note_failure(exc)
            raise


def _rubric_at_hand() -> str:
    """The rubric of the task being graded (its ``TaskGrading``), whatever state the grader is given."""
    task = current_task()
    return task.grading.rubric_text if task is not None and task.grading is not None else ""


def _sent_back(result: list[Any], reason: str, missing: list[str]) -> list[Any]:
    """``result`` with the verdict answered by ``reason``: its ``GraderResponse`` tool message rewritten,
    or (a verdict given as text) a message added."""
    marker = {"lc_source": EVIDENCE_SOURCE, "missing": missing}
    out = [
        ToolMessage(reason, tool_call_id=m.tool_call_id, name=GRADER_TOOL, status="error", additional_kwargs=marker)
        if isinstance(m, ToolMessage) and m.name == GRADER_TOOL else m
        for m in result
    ]
    if not any(isinstance(m, ToolMessage) and m.name == GRADER_TOOL for m in result):
        out.append(HumanMessage(reason, additional_kwargs=marker))
    return out


def _note_failure(exc: Exception) -> None:
    message = getattr(exc, "ai_message", None)  # a verdict that failed LangChain's own parsing
    if isinstance(message, AIMessage):
        note("said", message.text or str(message.tool_calls))
    note("failure", exc)


def grader_middleware(node: GraderConfig, strategy: ChosenStrategy, evidence: list[str]) -> list[Any]:
    """``grader_middleware`` for ``RubricMiddleware``, outermost first: the evidence check, the
    structured-output ``strategy``, the cap of ``grader.max_model_calls`` per pass, and (for an
    OpenAI-compatible server) text in place of null content."""
    middleware = [EvidenceCheck(sorted(node.tools), evidence), strategy, CallBudget(node.max_model_calls)]
    return [*middleware, ToolCallContent()] if compatible_server(node) else middleware


def coverage(rubric_text: str, criteria: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How a verdict's criteria miss the rubric's lines: fewer of them, lines no criterion matches, or
    criteria that match no line (by shared words); None when they cover the rubric."""
    lines = rubric_lines(rubric_text)
    names = [str(criterion.get("name", "")) for criterion in criteria]
    uncovered = [line for line in lines if not any(_same(line, name) for name in names)]
    other = [name for name in names if not any(_same(line, name) for line in lines)]
    if len(names) >= len(lines) and not uncovered and not other:
        return None
    return {"lines": len(lines), "criteria": len(names), "uncovered": uncovered, "other": other}


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9_]+", text.lower()) if len(word) > 2 or word.isdigit()}


def _same(line: str, name: str) -> bool:
    """Whether a criterion name says what a rubric line says: half the words of the shorter one are shared."""
    a, b = _words(line), _words(name)
    return bool(a and b) and len(a & b) * 2 >= min(len(a), len(b))


class TaskGrading:
    """One task's notes from its grading passes, put into each evaluation as it is recorded.

    The grader middleware notes, through the task's context, what it saw in the pass at hand: what the
    grader said instead of a verdict, the error that ended the pass, evidence that a verdict lacked.
    ``annotate`` adds them to the pass's evaluation (the library stores the same dict in its state, so
    the checkpoint keeps them too) with the coverage flag, and rewrites a ``grader_error``'s explanation
    into one a user can act on.
    """

    def __init__(self, node: GraderConfig, strategy: str, rubric_text: str, log: Any, console: Any) -> None:
        self.node = node
        self.strategy = strategy
        self.rubric_text = rubric_text
        self.log = log
        self.console = console
        self.notes: dict[str, Any] = {}

    def note(self, kind: str, value: Any) -> None:
        """Something the middleware saw in the current pass."""
        self.notes[kind] = value
        if kind == "said":
            self.log.info("grader_text", text=_bounded(value))
        elif kind == "sent_back":
            self.log.info("verdict_sent_back", missing=value)
            self.console.line(f"   verdict sent back: it rests on {', '.join(value)}, never called in this pass")

    def annotate(self, evaluation: dict[str, Any]) -> None:
        """Add this pass's notes and flags to its evaluation, and start the next pass afresh."""
        notes, self.notes = self.notes, {}
        if evaluation["result"] == "grader_error":
            self._explain(evaluation, notes)
        elif notes.get("unsupported"):
            evaluation["unsupported"] = {"missing": notes["unsupported"]}
            self.log.warning("verdict_unsupported", iteration=evaluation["iteration"], missing=notes["unsupported"])
            self.console.line(f"   ! unsupported: the verdict rests on {', '.join(notes['unsupported'])}, never called in this pass")
        if evaluation["result"] != "grader_error" and (flag := coverage(self.rubric_text, evaluation["criteria"])):
            evaluation["coverage"] = flag
            self.log.warning("verdict_coverage", iteration=evaluation["iteration"], **flag)
            self.console.line(f"   ! coverage: {_coverage_text(flag)}")

    def _explain(self, evaluation: dict[str, Any], notes: dict[str, Any]) -> None:
        """Who failed, where, with which strategy, what the server said, and the fix to try."""
        exc, said = notes.get("failure"), notes.get("said")
        if said is not None:
            evaluation["grader_said"] = _bounded(said)
        if isinstance(exc, ModelCallLimitExceededError):
            fix = f"raise grader.max_model_calls, or {FIXES.get(self.strategy, OTHER_STRATEGY).removeprefix('try ')}"
        elif exc is not None and is_provider_error(exc) and getattr(exc, "status_code", None) in (None, 401, 403, 404, 429):
            fix = fix_for(exc, self.node, "grader")
        elif exc is None or is_provider_error(exc) or isinstance(exc, StructuredOutputError):
            fix = FIXES.get(self.strategy, OTHER_STRATEGY)
        else:  # not the server's answer: a script, a tool or a bug; its message is the cause
            fix = None
        if exc is not None:
            cause = failure(exc)
        elif said is not None:
            cause = f"answered in text instead of a verdict: {_bounded(said, 200)!r}"
        else:
            cause = evaluation["explanation"]
        using = f"grader.structured_output={self.node.structured_output}"
        if self.strategy != self.node.structured_output:
            using += f", strategy {self.strategy}"
        advice = f" (fix: {fix})" if fix else ""
        evaluation["explanation"] = f"{describe_model(self.node, 'grader')} ({using}): {cause}{advice}"


def _bounded(text: str, limit: int = SAID_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...(+{len(text) - limit} chars)"


def _coverage_text(flag: dict[str, Any]) -> str:
    parts = [f"{flag['criteria']} criteria for {flag['lines']} rubric lines"]
    if flag["uncovered"]:
        parts.append("not covered: " + "; ".join(flag["uncovered"]))
    if flag["other"]:
        parts.append("not in the rubric: " + "; ".join(flag["other"]))
    return ", ".join(parts)


def final_status(status: Status, evaluations: list[Evaluation], strict_coverage: bool) -> Status:
    """A ``satisfied`` run whose last verdict is unsupported, or (``grader.strict_coverage``) does not
    cover the rubric, ends ``unsupported``."""
    last = evaluations[-1] if evaluations else None
    if status is Status.SATISFIED and last is not None and (last.unsupported or (strict_coverage and last.coverage)):
        return Status.UNSUPPORTED
    return status
