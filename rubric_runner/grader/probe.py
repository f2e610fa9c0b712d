"""``grader.structured_output=auto``: the strategy a run uses, probed from an OpenAI-compatible server.

``auto`` asks such a server (an ``openai:`` model with a ``base_url``) for each strategy's request shape,
in order of preference, before any task runs; for any other model it takes LangChain's own pick from
the model's profile.
"""

from __future__ import annotations

import json
from typing import Any

from ..compat.langchain import supports_provider_strategy
from ..config.schema import GraderConfig, StructuredOutput
from ..environment import PROBES_SEEN, remembered
from ..errors import UsageError
from ..models.errors import OUTAGE_STATUSES, ProviderFault, describe_model, failure, fix_for
from ..models.quirks import compatible_server
from ..models.replies import UNREADABLE, ReplyError

PROBE_NAME = "structured_output_probe"
PROBE_PROMPT = f"Call the {PROBE_NAME} tool with ok=true, or answer with the JSON object {{\"ok\": true}}."
"""The one message of every probe request (a fake server can tell a probe by it)."""
PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
PROBE_TOOL = {"type": "function", "function": {"name": PROBE_NAME, "description": "Say that tools work.", "parameters": PROBE_SCHEMA}}
PROBES: dict[str, dict[str, Any]] = {
    "tool": {"tools": [PROBE_TOOL], "tool_choice": "required"},
    "named": {"tools": [PROBE_TOOL], "tool_choice": {"type": "function", "function": {"name": PROBE_NAME}}},
    "provider": {"response_format": {"type": "json_schema", "json_schema": {"name": PROBE_NAME, "schema": PROBE_SCHEMA, "strict": True}}},
    "json": {"response_format": {"type": "json_object"}},
}
"""What ``auto`` asks an OpenAI-compatible server, in order of preference: the first that works is used."""


def probe_server(model: Any, node: GraderConfig) -> tuple[str | None, dict[str, str]]:
    """Ask an OpenAI-compatible server for each strategy's request shape, once each, in order of
    preference; the first that works is chosen. Returns ``(strategy or None, what each probe found)``;
    with the process's tweaks on (``environment``), remembered by base URL and model. A server that is
    down, overloaded or answers with no chat completion is a ``ProviderFault`` (no shape is to blame)."""
    key = (str(model.openai_api_base or ""), str(model.model_name))
    strategy, found = remembered(PROBES_SEEN, key, lambda: _probe(model, node))
    return strategy, dict(found)


def _probe(model: Any, node: GraderConfig) -> tuple[str | None, dict[str, str]]:
    import openai

    client = model.root_client.with_options(max_retries=0)
    found: dict[str, str] = {}
    for strategy, shape in PROBES.items():
        try:
            reply = client.chat.completions.create(
                model=model.model_name, messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=32, temperature=0, **shape
            )
            if not reply.choices:
                raise ReplyError("the reply to auto's probe has no choices (an empty `choices` list)")
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code in OUTAGE_STATUSES:
                raise _fault(exc, node, strategy) from exc
            found[strategy] = failure(exc)
            continue
        except (openai.APIConnectionError, ReplyError) as exc:  # a timeout is a connection error too
            raise _fault(exc, node, strategy) from exc
        except UNREADABLE as exc:
            said = " ".join(str(exc).split())[:200]
            unread = ReplyError(f"the reply to auto's probe could not be read as the API's JSON ({type(exc).__name__}: {said})")
            raise _fault(unread, node, strategy) from exc
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


def _fault(exc: BaseException, node: GraderConfig, strategy: str) -> ProviderFault:
    """A probe that could not ask the server at all, in one line naming the grader, where, and the fix."""
    using = f"grader.structured_output=auto, probing {strategy}"
    return ProviderFault(f"{describe_model(node, 'grader')} ({using}): {failure(exc)} (fix: {fix_for(exc, node, 'grader')})")


def choose_strategy(node: GraderConfig, model: Any, tools: list[Any]) -> tuple[str, dict[str, str] | None]:
    """The strategy a run uses, and what ``auto``'s probe found (None when nothing was probed).

    ``auto`` probes an OpenAI-compatible server (an ``openai:`` model with a ``base_url``); for any other
    model it takes LangChain's own pick from the model profile (``provider`` where the profile says the
    model has native structured output, else ``tool``).
    """
    if node.structured_output != StructuredOutput.auto:
        return str(node.structured_output), None
    if compatible_server(node):
        strategy, found = probe_server(model, node)
        if strategy is None:
            tried = "; ".join(f"{name}: {result}" for name, result in found.items())
            raise UsageError(
                "grader.structured_output",
                f"the server at {node.base_url} takes none of the verdict shapes auto tries ({tried})",
                "serve a model with tool calling or JSON output, or use a chat format that supports them",
            )
        return strategy, found
    return ("provider" if supports_provider_strategy(model, tools) else "tool"), None
