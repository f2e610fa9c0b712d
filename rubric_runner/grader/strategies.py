"""How the grader's verdict comes back: one plain object per structured-output strategy.

``tool`` and ``provider`` are LangChain's own ``ToolStrategy`` and ``ProviderStrategy``. ``named`` and
``json`` serve OpenAI-compatible servers that lack a forced ``tool_choice`` or JSON-schema output: both
offer the evidence tools with the model free to choose, and take the verdict from a ``GraderResponse``
tool call (``named``, forced by name when the grader answers in text) or from JSON text (``json``, the
schema in the prompt, ``response_format: json_object`` while it repairs). Each reads the verdict itself,
as LangChain's strategies do. A strategy ``prepare``s the grader's request and ``read``s each reply
into a ``Step``; the grading pass (``grader.middleware``) drives them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, cast

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError

from ..compat.deepagents import GRADER_TOOL, grader_response
from .evidence import EVIDENCE_SOURCE

REASK = "Return your verdict now: call GraderResponse."


@dataclass
class Step:
    """What a strategy made of one reply: the messages it adds to the pass, the verdict if it gave one,
    and the request to send next when the reply must be asked again (a re-ask or a repair)."""

    kept: list[Any]
    verdict: Any = None
    again: ModelRequest | None = None


@dataclass
class Strategy:
    """A structured-output strategy by ``name``."""

    name: str
    response_format: Any = None
    tool: dict[str, Any] = field(default_factory=dict)

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """The grader's request as this strategy sends it."""
        raise NotImplementedError

    def read(self, request: ModelRequest, response: ModelResponse, said: Any) -> Step:
        """What a reply gives; ``said(text)`` hears what the grader answered instead of a verdict."""
        raise NotImplementedError


def parse_verdict(data: Any) -> tuple[Any, str | None]:
    """``(GraderResponse, None)`` for a valid verdict, ``(None, why not)`` otherwise."""
    try:
        return grader_response().model_validate(data), None
    except ValidationError as exc:
        return None, "; ".join(f"{'.'.join(map(str, e['loc'])) or 'verdict'}: {e['msg']}" for e in exc.errors()[:5])


def json_in(text: str) -> Any:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost braces."""
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    start, end = text.find("{"), text.rfind("}")
    for candidate in (text, fenced.group(1) if fenced else None, text[start : end + 1] if 0 <= start < end else None):
        if candidate:
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    raise ValueError("no JSON object in the reply")


def _replies(response: ModelResponse) -> list[AnyMessage]:
    """``response.result`` as a request's messages (LangChain types it as any ``BaseMessage``; it holds the model's)."""
    return cast("list[AnyMessage]", response.result)


def last_ai(messages: list[Any]) -> AIMessage | None:
    """The last model message in ``messages``."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


class Fixed(Strategy):
    """``tool`` or ``provider``: LangChain's own strategy, fixed in place of its pick."""

    def prepare(self, request: ModelRequest) -> ModelRequest:
        return request.override(response_format=self.response_format)

    def read(self, request: ModelRequest, response: ModelResponse, said: Any) -> Step:
        message = last_ai(response.result)
        if response.structured_response is None and message is not None and not message.tool_calls:
            said(message.text)  # the pass ends here without a verdict
        return Step(response.result, response.structured_response)


class Named(Strategy):
    """``named``: evidence tools and ``GraderResponse`` offered with the choice left to the model; a text
    answer is asked again with ``GraderResponse`` forced by name, as is the call after a broken verdict.
    After a verdict sent back for missing evidence, the missing tool is forced by name; a text answer to
    that, too, is asked again for the verdict (which then stands as unsupported)."""

    def prepare(self, request: ModelRequest) -> ModelRequest:
        return request.override(response_format=None, tools=[*request.tools, self.tool], tool_choice=_forced(request))

    def read(self, request: ModelRequest, response: ModelResponse, said: Any) -> Step:
        message = last_ai(response.result)
        if message is not None and not message.tool_calls:
            said(message.text)
            if request.tool_choice != GRADER_TOOL:
                reask = HumanMessage(REASK)
                again = request.override(messages=[*request.messages, *_replies(response), reask], tool_choice=GRADER_TOOL)
                return Step([*response.result, reask], None, again)
        return _settled(response)


def _forced(request: ModelRequest) -> str | None:
    """The tool to force by name: a missing evidence tool after a send-back, ``GraderResponse`` after a broken verdict."""
    last = request.messages[-1] if request.messages else None
    if last is not None and last.additional_kwargs.get("lc_source") == EVIDENCE_SOURCE:
        offered = {getattr(tool, "name", None) for tool in request.tools}
        missing = [name for name in last.additional_kwargs.get("missing", []) if name in offered]
        return missing[0] if missing else GRADER_TOOL
    if isinstance(last, ToolMessage) and last.name == GRADER_TOOL and last.status == "error":
        return GRADER_TOOL
    return None


def _settled(response: ModelResponse) -> Step:
    """A ``GraderResponse`` call taken as the verdict, or answered with why it was not taken."""
    message = last_ai(response.result)
    tool_calls = message.tool_calls if message else []
    calls = [call for call in tool_calls if call["name"] == GRADER_TOOL]
    if not calls:
        return Step(response.result)
    if len(calls) < len(tool_calls):
        reply = "Not taken: call the evidence tools first, then return GraderResponse on its own."
        verdict = None
    else:
        verdict, error = parse_verdict(calls[0]["args"])
        reply = (f"Returning structured response: {verdict}" if verdict
                 else f"Not a valid GraderResponse ({error}). Call GraderResponse again with every field fixed.")
    answers = [ToolMessage(reply, tool_call_id=call["id"], name=GRADER_TOOL, status="success" if verdict else "error")
               for call in calls]
    return Step([*response.result, *answers], verdict)


JSON_INSTRUCTIONS = """

When you have the evidence you need, answer with only a JSON object (no prose, no code fence) that matches this JSON schema:
{schema}
For example: {{"result": "needs_revision", "explanation": "One criterion fails.", "criteria": [{{"name": "first criterion", "passed": true}}, {{"name": "second criterion", "passed": false, "gap": "what to fix"}}]}}"""


class Json(Strategy):
    """``json``: the schema in the system prompt, evidence tools offered as usual, the verdict read from the
    JSON the grader answers with; a reply that is not a valid verdict goes back with the reason, with
    ``response_format: json_object`` on OpenAI-compatible servers, until it is (``grader.max_model_calls``)."""

    def prepare(self, request: ModelRequest) -> ModelRequest:
        instructions = JSON_INSTRUCTIONS.format(schema=json.dumps(grader_response().model_json_schema()))
        system = (request.system_message.text if request.system_message else "") + instructions
        return request.override(response_format=None, system_message=SystemMessage(system))

    def read(self, request: ModelRequest, response: ModelResponse, said: Any) -> Step:
        message = last_ai(response.result)
        if message is None or message.tool_calls:
            return Step(response.result)
        try:
            verdict, error = parse_verdict(json_in(message.text))
        except ValueError as exc:
            verdict, error = None, str(exc)
        if verdict is not None:
            return Step(response.result, verdict)
        said(message.text)
        fix = HumanMessage(f"That is not a valid GraderResponse ({error}). Answer again with only the JSON object.")
        settings = dict(request.model_settings)
        if _is_openai(request.model):
            settings["response_format"] = {"type": "json_object"}
        again = request.override(messages=[*request.messages, *_replies(response), fix], tools=[], model_settings=settings)
        return Step([*response.result, fix], None, again)


def _is_openai(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return False
    return isinstance(model, BaseChatOpenAI)


def strategy(name: str) -> Strategy:
    """The strategy called ``name`` (one that ``auto`` may choose)."""
    if name == "named":
        from langchain_core.tools import StructuredTool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        schema = grader_response()  # the very tool definition LangChain's ToolStrategy sends
        tool = StructuredTool(args_schema=schema.model_json_schema(), name=GRADER_TOOL, description=schema.__doc__ or "")
        return Named(name, tool=convert_to_openai_tool(tool))
    if name == "json":
        return Json(name)
    kind = ToolStrategy if name == "tool" else ProviderStrategy
    return Fixed(name, response_format=kind(grader_response()))
