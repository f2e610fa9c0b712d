"""Before any model call: every provider key is set, and each model's server answers and serves it."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from ..config.schema import Config, ModelConfig
from ..environment import API_KEY_ENV
from ..errors import UsageError
from .build import OFFLINE_HINT, OLLAMA_DEFAULT_URL, is_scripted, split_model

PREFLIGHT_TIMEOUT = 3.0


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
            raise UsageError(f"{role}.base_url", f"the server at {base_url} refused the key (HTTP {exc.code})",
                              f"set {names[0]} to a key it accepts") from None
        return  # it answers; it just cannot list models here
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise UsageError(f"{role}.base_url", f"nothing answers at {base_url} ({reason})",
                          f"{start} or set {role}.base_url, {OFFLINE_HINT}") from None
    try:
        served = read_ids(json.loads(body)) if read_ids else None
    except (ValueError, KeyError, TypeError):
        served = None  # not the listing this API documents: nothing to check against
    if served is not None and model_id not in served and f"{model_id}:latest" not in served:
        listed = ", ".join(served[:8]) or "no model"
        fix = f"ollama pull {model_id}" if provider == "ollama" else (
            f"set {role}.model={provider}:{served[0]}" if served else "load a model in the server")
        raise UsageError(f"{role}.model", f"the server at {base_url} does not serve {model_id!r} (it lists {listed})", fix)


def check_keys(config: Config, roles: tuple[str, ...]) -> None:
    """Fail before any model call when a provider's key is not set, naming every variable to set."""
    missing = {}
    for role in [role for role in ("worker", "grader") if role in roles]:
        node = getattr(config, role)
        names = API_KEY_ENV.get(split_model(node.model)[0])
        if names and not any(os.environ.get(name) for name in names):
            missing[role] = (node.model, names[0])
    if not missing:
        return
    models = list(dict.fromkeys(model for model, _ in missing.values()))
    variables = " and ".join(dict.fromkeys(name for _, name in missing.values()))
    need = "needs an API key" if len(models) == 1 else "need API keys"
    raise UsageError(",".join(f"{role}.model" for role in missing), f"{' and '.join(models)} {need}",
                      f"set {variables} in the environment, {OFFLINE_HINT}")


def check_servers(config: Config, roles: tuple[str, ...]) -> None:
    """Each model's server (a ``base_url``, or Ollama's) answers and serves the model: the pre-flight,
    over the network. Each problem is one ``UsageError``."""
    for role in [role for role in ("worker", "grader") if role in roles]:
        check_server(getattr(config, role), role)
