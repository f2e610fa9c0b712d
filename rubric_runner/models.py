"""Chat models from config: their servers' pre-flight check, provider errors explained, langchain's init_chat_model."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import ConfigError, ModelConfig
from .environment import API_KEY_ENV

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

EXTRAS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google_genai": "google",
    "openrouter": "openrouter",
    "fireworks": "fireworks",
    "baseten": "baseten",
    "ollama": "ollama",
}
"""The pip extra of rubric_runner that installs each provider's package."""

OLLAMA_DEFAULT_URL = "http://localhost:11434"
OFFLINE_HINT = "or run offline with worker=scripted grader=scripted"


def split_model(spec: str) -> tuple[str, str]:
    """``"provider:model-id"`` -> ``("provider", "model-id")``."""
    provider, _, model_id = spec.partition(":")
    return provider, model_id


def is_scripted(node: ModelConfig) -> bool:
    """Whether this model replays a script instead of calling a provider."""
    return split_model(node.model)[0] == "scripted"


PREFLIGHT_TIMEOUT = 3.0
ERROR_BODY_CHARS = 300
"""How much of a server's error body an error message quotes."""


def _server_listing(provider: str, base_url: str) -> tuple[str, dict[str, str], Any]:
    """Where ``provider``'s server at ``base_url`` lists its models: URL, headers, and how to read the ids."""
    if provider == "ollama":
        return f"{base_url}/api/tags", {}, lambda data: [m["name"] for m in data["models"]]
    if provider == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        return f"{base_url}/models", {"authorization": f"Bearer {key}"} if key else {}, lambda data: [m["id"] for m in data["data"]]
    if provider == "anthropic":
        headers = {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01"}
        return f"{base_url}/v1/models", headers, lambda data: [m["id"] for m in data["data"]]
    return base_url, {}, None


def check_server(node: ModelConfig, role: str) -> None:
    """Pre-flight for a model served at an address (``base_url``, or Ollama's): the server answers,
    and lists the model where its API can say which models it serves."""
    provider, model_id = split_model(node.model)
    base_url = node.base_url or (os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT_URL if provider == "ollama" else None)
    if base_url is None or is_scripted(node):
        return
    if not base_url.startswith(("http://", "https://")):
        base_url = f"http://{base_url}"
    base_url = base_url.rstrip("/")
    url, headers, read_ids = _server_listing(provider, base_url)
    start = "start `ollama serve`" if provider == "ollama" else "start the server"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=PREFLIGHT_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            names = API_KEY_ENV.get(provider, ("the provider's key variable",))
            raise ConfigError(f"{role}.base_url", f"the server at {base_url} refused the key (HTTP {exc.code})",
                              f"set {names[0]} to a key it accepts") from None
        return  # it answers; it just cannot list models here
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ConfigError(f"{role}.base_url", f"nothing answers at {base_url} ({reason})",
                          f"{start} or set {role}.base_url, {OFFLINE_HINT}") from None
    try:
        served = read_ids(json.loads(body)) if read_ids else None
    except (ValueError, KeyError, TypeError):
        served = None  # not the listing this API documents: nothing to check against
    if served is not None and model_id not in served and f"{model_id}:latest" not in served:
        listed = ", ".join(served[:8]) or "no model"
        fix = f"ollama pull {model_id}" if provider == "ollama" else (
            f"set {role}.model={provider}:{served[0]}" if served else "load a model in the server")
        raise ConfigError(f"{role}.model", f"the server at {base_url} does not serve {model_id!r} (it lists {listed})", fix)


def failure(exc: BaseException) -> str:
    """What a provider call's error says: the HTTP status and the server's message (its body's
    ``error.message``, else the body; bounded, on one line), or the error."""
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
    status = getattr(exc, "status_code", None)
    provider, _ = split_model(node.model)
    if status in (401, 403):
        return f"set {API_KEY_ENV.get(provider, ('the provider key variable',))[0]} to a key the server accepts"
    if status == 404:
        return f"check {role}.model and {role}.base_url"
    if status == 429:
        return "lower run.concurrency or set run.rate_limits"
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


def client_kwargs(node: ModelConfig) -> dict[str, Any]:
    """The settings passed to the provider's chat model class."""
    settings = {
        key: getattr(node, key)
        for key in ("temperature", "max_tokens", "timeout", "max_retries", "base_url")
        if getattr(node, key) is not None
    }
    return {**settings, **node.kwargs}


def build_chat_model(
    node: ModelConfig, role: str, state_dir: Path | None = None, extras: dict[str, Any] | None = None
) -> BaseChatModel:
    """Build the chat model a config node describes; ``role`` names the config key.

    ``state_dir`` (the run dir) keeps a scripted model's position in its script;
    ``extras`` (``cache``, ``rate_limiter``) go to the chat model class as they are.
    """
    extras = extras or {}
    if is_scripted(node):
        return _build_scripted(node, role, state_dir, extras)
    from deepagents.profiles.provider.provider_profiles import apply_provider_profile
    from langchain.chat_models import init_chat_model

    provider, model_id = split_model(node.model)
    profile = apply_provider_profile(node.model)
    if provider == "openai" and node.base_url:
        # OpenAI-compatible servers (vLLM, llama.cpp, LM Studio, ...) speak chat completions;
        # kwargs.use_responses_api=true still selects the Responses API.
        profile["use_responses_api"] = False
    kwargs = {**profile, **client_kwargs(node), **extras}
    if provider == "openai" and node.base_url and node.max_tokens is not None:
        # LangChain sends the cap as max_completion_tokens, which llama-cpp-python ignores: say it both ways
        kwargs["extra_body"] = {"max_tokens": node.max_tokens, **(kwargs.get("extra_body") or {})}
    try:
        return init_chat_model(model_id, model_provider=provider, **kwargs)
    except ImportError as exc:
        extra = EXTRAS.get(provider)
        fix = f"pip install 'rubric_runner[{extra}]'" if extra else f"install {exc.name or 'the provider package'}"
        raise ConfigError(f"{role}.model", f"provider package for {provider!r} is missing", fix) from None
    except ValueError as exc:  # an unknown provider, or settings the model class rejects
        problem = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        known = "Supported model providers" in problem
        fix = "use one of those providers, or scripted" if known else f"check {role}.model and its client settings"
        raise ConfigError(f"{role}.model", problem, fix) from None


def _build_scripted(node: ModelConfig, role: str, state_dir: Path | None, extras: dict[str, Any]) -> BaseChatModel:
    from .scripted import CURSOR_DIR, ScriptedChatModel, ScriptError, load_script

    if not node.script:
        raise ConfigError(f"{role}.script", "the scripted model needs a script file", f"set {role}.script=PATH")
    try:
        turns, turns_by_task = load_script(node.script, role)
    except ScriptError as exc:
        raise ConfigError(f"{role}.script", str(exc), "fix the script file") from None
    cursor_dir = state_dir / CURSOR_DIR / role if state_dir else None
    return ScriptedChatModel(model=node.model, turns=turns, turns_by_task=turns_by_task, cursor_dir=cursor_dir, **extras)
