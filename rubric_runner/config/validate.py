"""Validation of a composed config: what the schema's types cannot express, each problem one ``UsageError``."""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import is_dataclass, replace
from typing import Any, cast, get_type_hints
from urllib.parse import urlsplit

from omegaconf import DictConfig, OmegaConf

from ..environment import POSTGRES_URL_ENV
from ..errors import UsageError
from ..paths import CONF_DIR
from ..redaction import secret_entries
from .prices import PRICES_FILE, PriceError, load_prices, price_of
from .schema import STOP, Checkpointer, Config, ModelConfig, WorkerConfig

SUBAGENT_NAME = re.compile(r"^[A-Za-z][\w-]*$")
"""A subagent's name, as the worker's task tool is called with it."""


def _unknown_keys(node: DictConfig, schema: type, prefix: str = "") -> list[tuple[str, list[str]]]:
    """``(key, known keys)`` for each key of the resolved ``node`` that the dataclass ``schema`` lacks."""
    hints = get_type_hints(schema)
    unknown = []
    for key in node:
        name = str(key)
        full = f"{prefix}.{name}" if prefix else name
        if key not in hints:
            unknown.append((full, sorted(hints)))
        elif is_dataclass(hints[key]):
            unknown += _unknown_keys(node[key], hints[key], full)
    return unknown


def _check_base_url(url: str | None, key: str) -> None:
    parts = urlsplit(url or "")
    if url is not None and (parts.scheme not in ("http", "https") or not parts.hostname):
        raise UsageError(key, f"{url!r} is not an http(s) URL", f"e.g. {key}=http://127.0.0.1:8000/v1, or null")


def _check_tool_settings(spec: dict[str, Any], key: str) -> None:
    """Each tool's settings in ``spec`` (``grader.tools``, ``rubric.verify``, ...) are a mapping or null."""
    for name, settings in spec.items():
        if settings is not None and not isinstance(settings, dict):
            raise UsageError(f"{key}.{name}", f"settings must be a mapping or null, got {type(settings).__name__}",
                              f"e.g. {key}.{name}={{}}")


def postgres_url(configured: str | None) -> str | None:
    """The checkpoint database: ``run.checkpoint_url``, else ``$RUBRIC_RUNNER_POSTGRES_URL``."""
    return configured or os.environ.get(POSTGRES_URL_ENV) or None


def _check_postgres(configured: str | None) -> None:
    if importlib.util.find_spec("langgraph.checkpoint.postgres") is None:
        raise UsageError(
            "run.checkpointer", "postgres needs langgraph-checkpoint-postgres", "pip install 'rubric_runner[postgres]'"
        )
    if configured and (urlsplit(configured).password or "password=" in configured.lower()):
        raise UsageError(
            "run.checkpoint_url", "passwords are not accepted in config",
            f"drop it from the URL and set PGPASSWORD, or give the whole URL in {POSTGRES_URL_ENV}",
        )
    if not postgres_url(configured):
        raise UsageError(
            "run.checkpoint_url", "run.checkpointer=postgres needs a database",
            f"set {POSTGRES_URL_ENV}=postgresql://USER@HOST:5432/DB in the environment, or run.checkpoint_url",
        )


def validate(cfg: DictConfig) -> Config:
    """Resolve ``cfg`` against the schema and check what types cannot express."""
    secret = secret_entries(OmegaConf.to_container(cfg, resolve=False))
    if secret:
        raise UsageError(
            secret[0][0], "secrets are not accepted in config", "set the provider's API key environment variable instead"
        )
    try:
        typed = OmegaConf.get_type(cfg) is Config  # composed by Hydra with the schema already
        merged = cfg if typed else cast(DictConfig, OmegaConf.merge(OmegaConf.structured(Config), cfg))
        config: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many error types; all are config errors
        key = getattr(exc, "full_key", None) or "config"
        message = str(exc).splitlines()[0]
        raise UsageError(key, message, "fix the value or the override") from None
    unknown = _unknown_keys(merged, Config)  # keys added with +KEY=VALUE that no schema declares
    if unknown:
        key, known = unknown[0]
        raise UsageError(key, "unknown key", f"known keys here: {', '.join(known)}")
    for role in ("worker", "grader"):
        node: ModelConfig = getattr(config, role)
        if ":" not in node.model or node.model.startswith(":") or node.model.endswith(":"):
            raise UsageError(
                f"{role}.model",
                f"{node.model!r} is not 'provider:model-id'",
                f"e.g. {role}.model=anthropic:claude-haiku-4-5",
            )
        _check_base_url(node.base_url, f"{role}.base_url")
        _check_tool_settings(node.tools, f"{role}.tools")
    _check_tool_settings(config.rubric.verify, "rubric.verify")
    _check_worker_files(config.worker)
    if config.rubric.tasks and not config.rubric.dataset:
        raise UsageError("rubric.tasks", "selects tasks of a dataset, but rubric.dataset is not set",
                          "set rubric.dataset, or drop rubric.tasks")
    for key, example in (("max_iterations", 3), ("max_model_calls", 10)):
        value = getattr(config.grader, key)
        if isinstance(value, bool) or value < 1:
            raise UsageError(
                f"grader.{key}", f"must be a positive integer, got {value}", f"e.g. grader.{key}={example}"
            )
    required = ("text",) if config.rubric.dataset else ("task", "text")
    for key in required:
        if not str(getattr(config.rubric, key)).strip():
            raise UsageError(f"rubric.{key}", "is empty", f"give rubric.{key} some text")
    if not STOP.match(config.loop.stop):
        raise UsageError("loop.stop", f"{config.loop.stop!r} is not a stop rule",
                         "none, no_gain, no_gain:K (K passes in a row without a criterion gained) or regression; e.g. loop.stop=no_gain:2")
    for key in ("concurrency", "repeats"):
        value = getattr(config.run, key)
        if isinstance(value, bool) or value < 1:
            raise UsageError(f"run.{key}", f"must be a positive integer, got {value}", f"e.g. run.{key}=1")
    for provider, rate in config.run.rate_limits.items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
            raise UsageError(f"run.rate_limits.{provider}", f"must be a positive number, got {rate!r}", "requests per second, e.g. 2.0")
    if config.run.preview_chars < 0:
        raise UsageError("run.preview_chars", f"must be 0 or more, got {config.run.preview_chars}", "e.g. run.preview_chars=400")
    if isinstance(config.run.tool_output_chars, bool) or config.run.tool_output_chars < 1:
        raise UsageError("run.tool_output_chars", f"must be a positive integer, got {config.run.tool_output_chars}",
                         "e.g. run.tool_output_chars=40000")
    if config.run.checkpointer == Checkpointer.postgres:
        _check_postgres(config.run.checkpoint_url)
    fail_under = config.sweep.fail_under
    if fail_under is not None and not 0 <= fail_under <= 1:
        raise UsageError("sweep.fail_under", f"must be a fraction from 0 to 1, got {fail_under}", "e.g. sweep.fail_under=0.8")
    _check_limits(config)
    _check_prices(config)
    return config


def model_groups() -> list[str]:
    """The model groups a subagent's model may name (conf/model)."""
    return sorted(path.stem for path in (CONF_DIR / "model").glob("*.yaml"))


def subagent_model(worker: WorkerConfig, model: str | None) -> ModelConfig:
    """The model config of a subagent whose ``model`` is ``model``: the worker's, with a model group's
    settings (conf/model/NAME.yaml, its script left out: a scripted subagent replays ``worker.script``)
    or another provider:model-id over it."""
    if model is None:
        return worker
    if ":" in model:
        return replace(worker, model=model)
    group = cast(dict[str, Any], OmegaConf.to_container(OmegaConf.load(CONF_DIR / "model" / f"{model}.yaml"), resolve=False))
    return replace(worker, **{key: value for key, value in group.items() if key != "script"})


def _check_worker_files(worker: WorkerConfig) -> None:
    """The worker's subagents are named once each, with a known model; its skills dirs and memory files exist."""
    seen: set[str] = set()
    for index, spec in enumerate(worker.subagents):
        key = f"worker.subagents[{index}]"
        if not SUBAGENT_NAME.match(spec.name):
            raise UsageError(f"{key}.name", f"{spec.name!r} is not a name the task tool can call",
                             "letters, digits, _ and -, starting with a letter, e.g. researcher")
        if spec.name in seen:
            raise UsageError(f"{key}.name", f"a second subagent named {spec.name!r}", "give each subagent its own name")
        seen.add(spec.name)
        if not spec.description.strip():
            raise UsageError(f"{key}.description", "is empty", "say what the subagent does: the worker chooses it by this")
        model = spec.model
        if model is not None and ":" not in model and model not in model_groups():
            raise UsageError(f"{key}.model", f"{model!r} is neither a model group nor provider:model-id",
                             f"one of {', '.join(model_groups())}, or e.g. anthropic:claude-haiku-4-5; null for the worker's")
        if model is not None and ":" in model and (model.startswith(":") or model.endswith(":")):
            raise UsageError(f"{key}.model", f"{model!r} is not 'provider:model-id'", "e.g. anthropic:claude-haiku-4-5")
    for index, folder in enumerate(worker.skills):
        if not os.path.isdir(os.path.expanduser(folder)):
            raise UsageError(f"worker.skills[{index}]", f"{folder} is not a dir", "give a dir of skills, each a subdir with a SKILL.md")
    for index, file in enumerate(worker.memory):
        if not os.path.isfile(os.path.expanduser(file)):
            raise UsageError(f"worker.memory[{index}]", f"{file} is not a file", "give a memory file such as AGENTS.md")


LIMIT_EXAMPLES = {
    "limits.worker_calls": 50, "limits.worker_tokens": 200000, "limits.total_tokens": 400000, "limits.wall_seconds": 600,
    "run.budget_tokens": 2000000, "run.budget_usd": 5, "sweep.budget_tokens": 20000000, "sweep.budget_usd": 50,
}
"""Every limit and budget key, with an example value for its error message."""


def _check_limits(config: Config) -> None:
    """Each limit and budget is null or positive (the schema's types make calls and tokens whole)."""
    for key, example in LIMIT_EXAMPLES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value is not None and value <= 0:
            raise UsageError(key, f"must be positive, or null for no limit; got {value}", f"e.g. {key}={example}")


def _check_prices(config: Config) -> None:
    """The price table reads; with a USD budget, it prices every model: a USD budget is never guessed."""
    try:
        prices = load_prices(config.sweep.prices)
    except PriceError as exc:
        raise UsageError("sweep.prices", str(exc), "give a readable price table, or leave sweep.prices unset") from None
    usd_key = next((f"{scope}.budget_usd" for scope in ("run", "sweep") if getattr(config, scope).budget_usd is not None), None)
    if usd_key is None:
        return
    for key, model in (("worker.model", config.worker.model), ("grader.model", config.grader.model)):
        if price_of(model, prices) is None:
            scope = usd_key.partition(".")[0]
            raise UsageError(usd_key, f"{model} ({key}) has no price in {config.sweep.prices or PRICES_FILE}",
                             f"add it to the price table (sweep.prices=FILE), or budget in tokens: {scope}.budget_tokens")
