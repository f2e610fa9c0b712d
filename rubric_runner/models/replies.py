"""What a provider's reply says of itself: whether it finished, refused, or called tools with arguments that
do not parse; and a reply that is no answer (a stream cut before its finish, no choice, not the API's JSON)
turned into an error that says so.

``ReplyCheck`` rides on every chat model a plan builds; ``ReplyRetry`` retries a cut stream as the
client retries a dropped connection, up to ``*.max_retries``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import ModelError

from ..config.schema import ModelConfig

FINISH_KEYS = {"openai": ("finish_reason", "status"), "anthropic": ("stop_reason",)}
"""Where each protocol's reply says how it ended: chat completions' ``finish_reason`` (the Responses
API's ``status``), Anthropic's ``stop_reason``; a stream cut short has none of them."""
CLIENT_RETRIES = 2
"""The retries of OpenAI's and Anthropic's clients when ``*.max_retries`` is not set."""
UNREADABLE = (ValueError, KeyError, IndexError, TypeError, AttributeError)
"""What the provider packages raise for a reply they cannot read (a body that is not JSON, a field missing)."""


class ReplyError(ModelError):
    """A reply that came back (HTTP 200) but is no answer."""

    def fix(self, node: ModelConfig, role: str) -> str:
        """What to try, for ``role``'s model ``node``."""
        root = "(.../v1)" if node.model.startswith("openai:") else "(without /v1)"
        where = f"check that {role}.base_url is the API's root {root}, and see" if node.base_url else "see"
        return f"{where} the server's log for the cause"


class IncompleteReply(ReplyError):
    """A streamed reply that ended before its finish: never an answer."""

    is_retryable = True

    def fix(self, node: ModelConfig, role: str) -> str:
        return (f"raise {role}.max_retries, find what cuts the server's streams (a proxy's timeout), "
                f"or stream no more: {role}.kwargs.streaming=false")


class ReplyRetry(ModelRetryMiddleware):
    """Calls the model again for a reply cut before its finish, up to the model's ``max_retries``; the
    last such reply's error ends the call."""

    def __init__(self, node: ModelConfig) -> None:
        retries = CLIENT_RETRIES if node.max_retries is None else node.max_retries
        super().__init__(max_retries=retries, retry_on=(IncompleteReply,), on_failure="error", initial_delay=0.5, max_delay=8.0)


def unfinished(message: Any) -> bool:
    """Whether an OpenAI or Anthropic reply lacks what says how it ended (a stream cut short)."""
    metadata = getattr(message, "response_metadata", None) or {}
    keys = FINISH_KEYS.get(metadata.get("model_provider", ""))
    return keys is not None and not any(metadata.get(key) for key in keys)


def refusal(message: Any) -> str | None:
    """What the model said in declining: OpenAI's ``refusal`` (a block of it, on the Responses API),
    Anthropic's reply with ``stop_reason: refusal``; None for any other reply."""
    if said := (getattr(message, "additional_kwargs", None) or {}).get("refusal"):
        return str(said)
    content = getattr(message, "content", None)
    blocks = [block for block in content if isinstance(block, dict) and block.get("type") == "refusal"] if isinstance(content, list) else []
    if blocks:
        return " ".join(str(block.get("refusal") or "") for block in blocks)
    if (getattr(message, "response_metadata", None) or {}).get("stop_reason") == "refusal":
        return str(message.text) or "(no text)"
    return None


def flags(message: Any) -> list[tuple[str, str]]:
    """``(kind, detail)`` for each way a reply is no plain answer: ``incomplete`` (the text so far),
    ``refusal`` (what the model said), ``invalid_tool_call`` (the tool, and why its arguments do not parse)."""
    found = []
    if unfinished(message):
        found.append(("incomplete", str(getattr(message, "text", "") or "")))
    if (said := refusal(message)) is not None:
        found.append(("refusal", said))
    for call in getattr(message, "invalid_tool_calls", None) or []:
        error = " ".join(str(call.get("error") or "").split())
        found.append(("invalid_tool_call", f"{call.get('name')}: {error}"))
    return found


def storable(generations: Any) -> bool:
    """Whether a model call's generations are an answer a response cache may keep (not none, not cut short)."""
    return bool(generations) and not any(unfinished(getattr(g, "message", None)) for g in generations)


class ReplyCheck(BaseCallbackHandler):
    """A model's callback that fails a call whose reply is no answer, with a ``ReplyError`` saying why: a
    stream cut before its finish, a reply without a choice, or a reply the client could not read."""

    run_inline = True
    raise_error = True

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        generations = response.generations[0] if response.generations else []
        if not generations:
            raise ReplyError("the reply has no choices (an empty `choices` list)")
        message = getattr(generations[0], "message", None)
        if unfinished(message):
            text = str(getattr(message, "text", "") or "")
            raise IncompleteReply(f"the reply's stream ended before its finish (no finish_reason or stop_reason), "
                                  f"after {len(text)} characters of text")

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        if isinstance(error, UNREADABLE) and not isinstance(error, ModelError):
            said = " ".join(str(error).split())[:200]
            raise ReplyError(f"the reply could not be read as the API's JSON ({type(error).__name__}: {said})") from error
