"""What a task's grading passes noted, typed, and how each pass's evaluation is annotated with it.

The grading pass (``grader.middleware``) notes what it saw in the pass at hand: the transcript the
grader's payload was built from and the payload, each model call, what the grader said instead of a
verdict, the error that ended the pass, a verdict sent back for its evidence, one that came back without
it. When RubricMiddleware reports the pass, ``TaskGrading.annotate`` adds the notes to its evaluation
(the library keeps the same dict in its state, so the checkpoint keeps them too) with the grader's view,
its model calls and the coverage and cut-view flags, and rewrites a ``grader_error``'s explanation into
one a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import StructuredOutputError
from langchain_core.messages import AIMessage

from ..compat.deepagents import grader_view
from ..config.schema import GraderConfig, OnCutView, StructuredOutput
from ..models.errors import describe_model, failure, fix_for, is_provider_error
from ..models.quirks import compatible_server
from ..records import GraderView
from .evidence import coverage

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


@dataclass
class PassNotes:
    """What the middleware saw in one grading pass."""

    said: str | None = None
    """What the grader answered instead of a verdict (the last such answer)."""
    failure: BaseException | None = None
    """The error that ended the pass."""
    sent_back: list[str] = field(default_factory=list)
    """The tools a verdict rested on without calling them: it was sent back once for them."""
    unsupported: list[str] = field(default_factory=list)
    """The tools a verdict still rested on without calling them, after it was sent back."""
    tool_failure: tuple[str, BaseException] | None = None
    """An evidence tool that raised, by name, and its error: what ended the pass, unless ``failure`` says otherwise."""
    calls: int = 0
    """The grader's model calls so far in the pass (every invocation of its agent, the coverage retry's too)."""
    transcript: list[Any] | None = None
    """The messages the grader's payload was built from."""
    payload: str | None = None
    """The pass's first payload to the grader."""


class TaskGrading:
    """One task's grading passes: the notes of the pass at hand, and the annotation of each evaluation."""

    def __init__(self, node: GraderConfig, strategy: str, rubric_text: str, log: Any, console: Any) -> None:
        self.node = node
        self.strategy = strategy
        self.rubric_text = rubric_text
        self.log = log
        self.console = console
        self.notes = PassNotes()

    def looked_at(self, messages: list[Any]) -> None:
        """The grader's payload is built from ``messages``."""
        self.notes.transcript = messages

    def asked(self, payload: str) -> None:
        """A grader invocation opened with ``payload``; the pass's first one is kept."""
        if self.notes.payload is None:
            self.notes.payload = payload

    def called(self) -> None:
        """The grader's agent is making a model call in this pass."""
        self.notes.calls += 1

    def said(self, text: str) -> None:
        """The grader answered in text instead of a verdict."""
        self.notes.said = text
        self.log.info("grader_text", text=_bounded(text))

    def failed(self, exc: BaseException) -> None:
        """The pass ended with ``exc``; a verdict LangChain could not parse is what the grader said."""
        said = getattr(exc, "ai_message", None)
        if isinstance(said, AIMessage):
            self.said(said.text or str(said.tool_calls))
        self.notes.failure = exc

    def sent_back(self, missing: list[str]) -> None:
        """A verdict went back for the evidence it rests on."""
        self.notes.sent_back = missing
        self.log.info("verdict_sent_back", missing=missing)
        self.console.line(f"   verdict sent back: it rests on {', '.join(missing)}, which gave no evidence in this pass")

    def unsupported(self, missing: list[str]) -> None:
        """A verdict came back still resting on evidence the pass never gathered."""
        self.notes.unsupported = missing

    def tool_failed(self, name: str, exc: BaseException) -> None:
        """The evidence tool ``name`` raised ``exc``."""
        self.notes.tool_failure = (name, exc)

    def annotate(self, evaluation: dict[str, Any]) -> None:
        """Add this pass's notes and flags to its evaluation, and start the next pass afresh."""
        notes, self.notes = self.notes, PassNotes()
        if evaluation["result"] == "grader_error":
            self._explain(evaluation, notes)
        elif notes.unsupported:
            evaluation["unsupported"] = {"missing": notes.unsupported}
            self.log.warning("verdict_unsupported", iteration=evaluation["iteration"], missing=notes.unsupported)
            self.console.line(f"   ! unsupported: the verdict rests on {', '.join(notes.unsupported)}, which gave no evidence in this pass")
        if evaluation["result"] != "grader_error" and (flag := coverage(self.rubric_text, evaluation["criteria"])):
            evaluation["coverage"] = flag
            self.log.warning("verdict_coverage", iteration=evaluation["iteration"], **flag)
            self.console.line(f"   ! coverage: {_coverage_text(flag)}")
        evaluation["grader_calls"] = notes.calls
        if notes.transcript is not None:
            view = evaluation["view"] = grader_view(notes.transcript, notes.payload)
            seen = GraderView.model_validate(view)
            if seen.is_cut and any(not criterion.get("passed") for criterion in evaluation["criteria"]):
                evaluation["cut_view"] = True
                self._warn_cut_view(evaluation["iteration"], seen)

    def _warn_cut_view(self, iteration: int, view: GraderView) -> None:
        """A verdict whose failing criteria rest on a cut view, to the events and the console (unless ignored)."""
        if self.node.on_cut_view is OnCutView.ignore:
            return
        self.log.warning("verdict_on_cut_view", iteration=iteration, dropped=view.dropped, cut=len(view.cut),
                         cut_chars=view.cut_chars, offloaded=view.offloaded)
        self.console.line(f"   ! cut view: the failing criteria rest on a transcript the grader saw in part ({view.describe()})")

    def _explain(self, evaluation: dict[str, Any], notes: PassNotes) -> None:
        """Who failed, where, with which strategy, what the server said, and the fix to try."""
        exc, said = notes.failure, notes.said
        if said is not None:
            evaluation["grader_said"] = _bounded(said)
        if exc is None and notes.tool_failure is not None:  # the tool's error, not the grader's answer
            name, error = notes.tool_failure
            evaluation["explanation"] = (f"{describe_model(self.node, 'grader')}: its tool {name!r} raised {failure(error)} "
                                         f"(fix: fix the tool {name!r}, or take it out of grader.tools)")
            return
        if isinstance(exc, ModelCallLimitExceededError):
            fix = f"raise grader.max_model_calls, or {FIXES.get(self.strategy, OTHER_STRATEGY).removeprefix('try ')}"
        elif exc is not None and is_provider_error(exc) and not _refused_request(exc, self.node):
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


def _refused_request(exc: BaseException, node: GraderConfig) -> bool:
    """Whether the server may have refused the request as the strategy shaped it: an HTTP 4xx other than a
    key, a model or a rate limit; or a 500 from an OpenAI-compatible server whose strategy was set, not
    probed (llama-cpp-python refuses a shape so). Any other 5xx is the server failing, whatever was asked."""
    status = getattr(exc, "status_code", None)
    if status == 500:
        return compatible_server(node) and node.structured_output != StructuredOutput.auto
    return isinstance(status, int) and 400 <= status < 500 and status not in (401, 403, 404, 429)


def _bounded(text: str, limit: int = SAID_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...(+{len(text) - limit} chars)"


def _coverage_text(flag: dict[str, Any]) -> str:
    parts = [f"{flag['criteria']} criteria for {flag['lines']} rubric lines"]
    if flag["uncovered"]:
        parts.append("not covered: " + "; ".join(flag["uncovered"]))
    if flag["other"]:
        parts.append("not in the rubric: " + "; ".join(flag["other"]))
    return ", ".join(parts)


class _Unobserved(TaskGrading):
    """The grading of no task (a pass run outside one): it notes nothing."""

    def __init__(self) -> None:
        self.rubric_text = ""
        self.notes = PassNotes()

    def said(self, text: str) -> None:
        pass

    def failed(self, exc: BaseException) -> None:
        pass

    def sent_back(self, missing: list[str]) -> None:
        pass

    def unsupported(self, missing: list[str]) -> None:
        pass

    def looked_at(self, messages: list[Any]) -> None:
        pass

    def asked(self, payload: str) -> None:
        pass

    def called(self) -> None:
        pass


UNOBSERVED = _Unobserved()
