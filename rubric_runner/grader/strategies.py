"""How the grader's verdict comes back: one middleware per structured-output strategy, and ``auto``'s probe.

``tool`` and ``provider`` are LangChain's own ``ToolStrategy`` and ``ProviderStrategy``. ``named`` and
``json`` serve OpenAI-compatible servers that lack a forced ``tool_choice`` or JSON-schema output: both
offer the evidence tools with the model free to choose, and take the verdict from a ``GraderResponse``
tool call (``named``, forced by name when the grader answers in text) or from JSON text (``json``, the
schema in the prompt, ``response_format: json_object`` while it repairs). Each parses the verdict itself
and hands it back as the model call's ``structured_response``, as LangChain's strategies do."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError

from ..config.schema import GraderConfig, StructuredOutput
from ..context import current_task
from ..errors import ConfigError
from ..models.errors import failure
from ..models.quirks import compatible_server

GRADER_TOOL = "GraderResponse"

EVIDENCE_SOURCE = "rubric_runner_evidence_check"
"""``lc_source`` of the message that sends a verdict back for missing evidence (its ``missing`` tools)."""

REASK = "Return your verdict now: call GraderResponse."

PROBE_NAME = "structured_output_probe"

PROBE_PROMPT = f"Call the {PROBE_NAME} tool with ok=true, or answer with the JSON object {{\"ok\": true}}."
"""The one message of every probe request (a fake server can tell a probe by it)."""

PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

PROBE_TOOL = {"type": "function", "function": {"name": PROBE_NAME, "description": "Say that tools work.", "parameters": PROBE_SCHEMA}}

PROBES = {
    "tool": {"tools": [PROBE_TOOL], "tool_choice": "required"},
    "named": {"tools": [PROBE_TOOL], "tool_choice": {"type": "function", "function": {"name": PROBE_NAME}}},
    "provider": {"response_format": {"type": "json_schema", "json_schema": {"name": PROBE_NAME, "schema": PROBE_SCHEMA, "strict": True}}},
    "json": {"response_format": {"type": "json_object"}},
}
"""What ``auto`` asks an OpenAI-compatible server, in order of preference: the first that works is used."""


def _grader_response() -> Any:
    from deepagents.middleware.rubric import GraderResponse

    return GraderResponse


def note(kind: str, value: Any) -> None:
    """Tell the current task's grading record what the grader did (``said``, ``failure``, ``unsupported``)."""
    task = current_task()
    if task is not None and task.grading is not None:
        task.grading.note(kind, value)


def parse_verdict(data: Any) -> tuple[Any, str | None]:
    """``(GraderResponse, None)`` for a valid verdict, ``(None, why not)`` otherwise."""
    try:
        return _grader_response().model_validate(data), None
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


def last_ai(messages: list[Any]) -> AIMessage | None:
    """The last model message in ``messages``."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


class FixedStrategy(AgentMiddleware):
    """Replaces LangChain's pick of structured-output strategy with one fixed strategy (``tool``, ``provider``)."""

    def __init__(self, response_format: ToolStrategy | ProviderStrategy) -> None:
        super().__init__()
        self.response_format = response_format

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return self._noted(handler(request.override(response_format=self.response_format)))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return self._noted(await handler(request.override(response_format=self.response_format)))

    @staticmethod
    def _noted(response: ModelResponse) -> ModelResponse:
        message = last_ai(response.result)
        if response.structured_response is None and message is not None and not message.tool_calls:
            note("said", message.text)  # the pass ends here without a verdict
        return response


class NamedToolStrategy(AgentMiddleware):
    """``named``: evidence tools and ``GraderResponse`` offered with the choice left to the model; a text
    answer is asked again with ``GraderResponse`` forced by name, as is the call after a broken verdict.
    After a verdict sent back for missing evidence, the missing tool is forced by name; a text answer to
    that, too, is asked again for the verdict (which then stands as unsupported)."""

    def __init__(self) -> None:
        super().__init__()
        from langchain_core.tools import StructuredTool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        schema = _grader_response()  # the very tool definition LangChain's ToolStrategy sends
        tool = StructuredTool(args_schema=schema.model_json_schema(), name=GRADER_TOOL, description=schema.__doc__)
        self.tool = convert_to_openai_tool(tool)

    def _first(self, request: ModelRequest) -> ModelRequest:
        return request.override(response_format=None, tools=[*request.tools, self.tool], tool_choice=_forced(request))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        request = self._first(request)
        response = handler(request)
        if _answered_in_text(response) and request.tool_choice != GRADER_TOOL:
            again = _reask(request, response)
            response = _joined(response, again, handler(again))
        return _settle(response)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        request = self._first(request)
        response = await handler(request)
        if _answered_in_text(response) and request.tool_choice != GRADER_TOOL:
            again = _reask(request, response)
            response = _joined(response, again, await handler(again))
        return _settle(response)


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


def _answered_in_text(response: ModelResponse) -> bool:
    message = last_ai(response.result)
    if message is None or message.tool_calls:
        return False
    note("said", message.text)
    return True


def _reask(request: ModelRequest, response: ModelResponse) -> ModelRequest:
    return request.override(messages=[*request.messages, *response.result, HumanMessage(REASK)], tool_choice=GRADER_TOOL)


def _joined(first: ModelResponse, again: ModelRequest, second: ModelResponse) -> ModelResponse:
    """The messages of an answer and of its re-ask, as one model step."""
    return ModelResponse(result=[*first.result, again.messages[-1], *second.result], structured_response=second.structured_response)


def _settle(response: ModelResponse) -> ModelResponse:
    """Turn a ``GraderResponse`` call into the structured response, or answer it with why it was not taken."""
    message = last_ai(response.result)
    calls = [call for call in (message.tool_calls if message else []) if call["name"] == GRADER_TOOL]
    if not calls:
        return response
    if len(calls) < len(message.tool_calls):
        reply = "Not taken: call the evidence tools first, then return GraderResponse on its own."
        verdict = None
    else:
        verdict, error = parse_verdict(calls[0]["args"])
        reply = f"Returning structured response: {verdict}" if verdict else f"Not a valid GraderResponse ({error}). Call GraderResponse again with every field fixed."
    answers = [ToolMessage(reply, tool_call_id=call["id"], name=GRADER_TOOL, status="success" if verdict else "error") for call in calls]
    return ModelResponse(result=[*response.result, *answers], structured_response=verdict)


JSON_INSTRUCTIONS = """

When you have the evidence you need, answer with only a JSON object (no prose, no code fence) that matches this JSON schema:
{schema}
For example: {{"result": "needs_revision", "explanation": "One criterion fails.", "criteria": [{{"name": "first criterion", "passed": true}}, {{"name": "second criterion", "passed": false, "gap": "what to fix"}}]}}"""


class JsonStrategy(AgentMiddleware):
    """``json``: the schema in the system prompt, evidence tools offered as usual, the verdict read from the
    JSON the grader answers with; a reply that is not a valid verdict goes back with the reason, with
    ``response_format: json_object`` on OpenAI-compatible servers, until it is (``grader.max_model_calls``)."""

    def __init__(self) -> None:
        super().__init__()
        self.instructions = JSON_INSTRUCTIONS.format(schema=json.dumps(_grader_response().model_json_schema()))

    def _first(self, request: ModelRequest) -> ModelRequest:
        system = (request.system_message.text if request.system_message else "") + self.instructions
        return request.override(response_format=None, system_message=SystemMessage(system))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        request = self._first(request)
        taken: list[Any] = []
        while request is not None:
            response, repair = _verdict_or_repair(request, handler(request))
            taken += [*response.result, *repair.messages[-1:]] if repair else response.result
            request = repair
        return ModelResponse(result=taken, structured_response=response.structured_response)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        request = self._first(request)
        taken: list[Any] = []
        while request is not None:
            response, repair = _verdict_or_repair(request, await handler(request))
            taken += [*response.result, *repair.messages[-1:]] if repair else response.result
            request = repair
        return ModelResponse(result=taken, structured_response=response.structured_response)


def _verdict_or_repair(request: ModelRequest, response: ModelResponse) -> tuple[ModelResponse, ModelRequest | None]:
    """A tool call goes on as it is; a valid JSON verdict becomes the structured response; anything else
    comes back with the request that sends it back with the reason."""
    message = last_ai(response.result)
    if message is None or message.tool_calls:
        return response, None
    try:
        verdict, error = parse_verdict(json_in(message.text))
    except ValueError as exc:
        verdict, error = None, str(exc)
    if verdict is not None:
        return ModelResponse(result=response.result, structured_response=verdict), None
    note("said", message.text)
    fix = HumanMessage(f"That is not a valid GraderResponse ({error}). Answer again with only the JSON object.")
    settings = dict(request.model_settings)
    if _is_openai(request.model):
        settings["response_format"] = {"type": "json_object"}
    return response, request.override(messages=[*request.messages, *response.result, fix], tools=[], model_settings=settings)


def _is_openai(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return False
    return isinstance(model, BaseChatOpenAI)


def strategy_middleware(strategy: str) -> AgentMiddleware:
    """The middleware that makes the grader answer by ``strategy`` (a name auto may choose)."""
    if strategy == "named":
        return NamedToolStrategy()
    if strategy == "json":
        return JsonStrategy()
    kind = ToolStrategy if strategy == "tool" else ProviderStrategy
    return FixedStrategy(kind(_grader_response()))


class ChosenStrategy(AgentMiddleware):
    """The grader's strategy in its middleware stack, set with ``use`` once the run has chosen it (``auto``
    probes the server first), so the rest of the stack is built and checked before any model call."""

    def __init__(self) -> None:
        super().__init__()
        self.chosen: AgentMiddleware | None = None

    def use(self, strategy: str) -> None:
        """Answer by ``strategy`` from now on."""
        self.chosen = strategy_middleware(strategy)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return self.chosen.wrap_model_call(request, handler)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await self.chosen.awrap_model_call(request, handler)


PROBED: dict[tuple[str, str], tuple[str | None, dict[str, str]]] = {}
"""What ``probe_server`` found, by base URL and model: the jobs of a sweep in one process probe a server once."""


def probe_server(model: Any) -> tuple[str | None, dict[str, str]]:
    """Ask an OpenAI-compatible server for each strategy's request shape, once each, in order of
    preference; the first that works is chosen. Returns ``(strategy or None, what each probe found)``,
    remembered for the process by base URL and model."""
    key = (str(model.openai_api_base or ""), str(model.model_name))
    if key not in PROBED:
        PROBED[key] = _probe(model)
    strategy, found = PROBED[key]
    return strategy, dict(found)


def _probe(model: Any) -> tuple[str | None, dict[str, str]]:
    import openai

    client = model.root_client.with_options(max_retries=0)
    found: dict[str, str] = {}
    for strategy, shape in PROBES.items():
        try:
            reply = client.chat.completions.create(
                model=model.model_name, messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=32, temperature=0, **shape
            )
        except openai.APIError as exc:
            found[strategy] = failure(exc)
            continue
        message = reply.choices[0].message
        if "tools" in shape:
            works = any(call.function.name == PROBE_NAME for call in message.tool_calls or [])
            found[strategy] = "works" if works else "ignored: answered in text"
        else:
            try:
                works = isinstance(json.loads(message.content or ""), dict)
            except ValueError:
                works = False
            found[strategy] = "works" if works else "accepted, but the reply is not JSON"
        if works:
            return strategy, found
    return None, found


def choose_strategy(node: GraderConfig, model: Any, tools: list[Any]) -> tuple[str, dict[str, str] | None]:
    """The strategy a run uses, and what ``auto``'s probe found (None when nothing was probed).

    ``auto`` probes an OpenAI-compatible server (an ``openai:`` model with a ``base_url``); for any other
    model it takes LangChain's own pick from the model profile (``provider`` where the profile says the
    model has native structured output, else ``tool``).
    """
    if node.structured_output != StructuredOutput.auto:
        return str(node.structured_output), None
    if compatible_server(node):
        strategy, found = probe_server(model)
        if strategy is None:
            tried = "; ".join(f"{name}: {result}" for name, result in found.items())
            raise ConfigError(
                "grader.structured_output",
                f"the server at {node.base_url} takes none of the verdict shapes auto tries ({tried})",
                "serve a model with tool calling or JSON output, or use a chat format that supports them",
            )
        return strategy, found
    from langchain.agents.factory import _supports_provider_strategy

    return ("provider" if _supports_provider_strategy(model, tools=tools) else "tool"), None
