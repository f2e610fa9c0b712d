"""Provider errors explained: who failed, where, what the server said, and the fix."""

from __future__ import annotations

import json

from ..config.schema import ModelConfig
from ..environment import API_KEY_ENV
from .build import split_model
from .replies import ReplyError

ERROR_BODY_CHARS = 300
"""How much of a server's error body an error message quotes."""
OUTAGE_STATUSES = frozenset({502, 503, 504, 529})
"""HTTP statuses of a server that is down or overloaded (a gateway's, Anthropic's 529), whatever was asked."""


class ProviderFault(RuntimeError):
    """A provider's error where no task takes it (``auto``'s probe, before any task), explained in one line
    (``explain_error``); the client's error is its cause."""


def failure(exc: BaseException) -> str:
    """What a provider call's error says: the HTTP status and the server's message (its body's
    ``error.message``, else the body; bounded, on one line), what was wrong with a reply, or the error."""
    if isinstance(exc, ReplyError):
        return str(exc)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool):
        return f"{type(exc).__name__}: {exc}"
    body = (getattr(getattr(exc, "response", None), "text", "") or "").strip()
    try:
        message = json.loads(body)["error"]["message"]
        said = " ".join(str(message).split()) or "(empty error message)"
    except (ValueError, KeyError, TypeError):
        said = " ".join(body.split()) or "(empty body)"
    if len(said) > ERROR_BODY_CHARS:
        said = f"{said[:ERROR_BODY_CHARS]}...(+{len(said) - ERROR_BODY_CHARS} chars)"
    return f"HTTP {status}: {said}"


def is_provider_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a provider's client (an HTTP status, a timeout, a dropped connection)."""
    from langchain_core.exceptions import ModelError

    return isinstance(exc, ModelError) or type(exc).__module__.split(".")[0] in ("openai", "anthropic", "httpx", "google", "ollama")


def fix_for(exc: BaseException, node: ModelConfig, role: str) -> str:
    """The fix to try for a provider error, by its kind."""
    if isinstance(exc, ReplyError):
        return exc.fix(node, role)
    status = getattr(exc, "status_code", None)
    provider, _ = split_model(node.model)
    if status in (401, 403):
        return f"set {API_KEY_ENV.get(provider, ('the provider key variable',))[0]} to a key the server accepts"
    if status == 404:
        return f"check {role}.model and {role}.base_url"
    if status == 429:
        return "lower run.concurrency or set run.rate_limits"
    if status in OUTAGE_STATUSES:
        return f"the server is down or overloaded: try again later, or raise {role}.max_retries"
    if "timeout" in type(exc).__name__.lower():
        return f"raise {role}.timeout, or use a smaller model"
    if "connection" in type(exc).__name__.lower():
        return f"check that the server at {node.base_url} is running" if node.base_url else "check the network"
    return "see the server's log for the cause"


def describe_model(node: ModelConfig, role: str) -> str:
    """``worker openai:qwen at http://...``: which model, in which role, where."""
    return f"{role} {node.model}" + (f" at {node.base_url}" if node.base_url else "")


def explain_error(exc: BaseException, node: ModelConfig, role: str) -> str:
    """One line a user can act on for a provider error in ``role``: who, where, what the server said, the fix."""
    return f"{describe_model(node, role)}: {failure(exc)} (fix: {fix_for(exc, node, role)})"
