"""Chat models from config: their servers' pre-flight check, provider errors explained, langchain's init_chat_model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.schema import ModelConfig
from ..errors import UsageError

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


def client_kwargs(node: ModelConfig) -> dict[str, Any]:
    """The settings passed to the provider's chat model class."""
    settings = {
        key: getattr(node, key)
        for key in ("temperature", "max_tokens", "timeout", "max_retries", "base_url")
        if getattr(node, key) is not None
    }
    return {**settings, **node.kwargs}


def build_chat_model(
    node: ModelConfig, role: str, state_dir: Path | None = None, extras: dict[str, Any] | None = None,
    section: str | None = None, goes_on_from: Path | None = None,
) -> BaseChatModel:
    """Build the chat model a config node describes; ``role`` names the config key.

    ``state_dir`` (the run dir) keeps a scripted model's position in its script, whose ``section``
    (default: ``role``) it replays; ``goes_on_from``: the state dir of an earlier run whose position it starts
    from (a regrade's: the graded run's, or the repeat's before). ``extras`` (``cache``, ``rate_limiter``) go
    to the chat model class as they are.
    """
    extras = extras or {}
    if is_scripted(node):
        return _build_scripted(node, role, state_dir, extras, section or role, goes_on_from)
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
        raise UsageError(f"{role}.model", f"provider package for {provider!r} is missing", fix) from None
    except ValueError as exc:  # an unknown provider, or settings the model class rejects
        problem = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        known = "Supported model providers" in problem
        fix = "use one of those providers, or scripted" if known else f"check {role}.model and its client settings"
        raise UsageError(f"{role}.model", problem, fix) from None


def _build_scripted(node: ModelConfig, role: str, state_dir: Path | None, extras: dict[str, Any], section: str,
                    goes_on_from: Path | None) -> BaseChatModel:
    from .scripted import CURSOR_DIR, ScriptedChatModel, ScriptError, carry_on, load_script

    if not node.script:
        raise UsageError(f"{role}.script", "the scripted model needs a script file", f"set {role}.script=PATH")
    try:
        turns, turns_by_task = load_script(node.script, section)
    except ScriptError as exc:
        raise UsageError(f"{role}.script", str(exc), "fix the script file") from None
    cursor_dir = state_dir / CURSOR_DIR / section if state_dir else None
    earlier = goes_on_from / CURSOR_DIR / section if goes_on_from else None
    if cursor_dir is not None and earlier is not None and earlier.is_dir():
        carry_on(earlier, cursor_dir)
    return ScriptedChatModel(model=node.model, turns=turns, turns_by_task=turns_by_task, cursor_dir=cursor_dir, **extras)
