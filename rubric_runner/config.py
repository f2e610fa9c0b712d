"""Typed config schema (registered with Hydra's ConfigStore) and validation."""

from __future__ import annotations

import importlib.util
import os
import secrets
import threading
from dataclasses import dataclass, field, is_dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Dict, List, Optional, get_type_hints
from urllib.parse import urlsplit

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from .environment import POSTGRES_URL_ENV, job_env
from .paths import CONF_DIR, DATA_DIR
from .redaction import secret_entries


class ConfigError(ValueError):
    """A user-fixable problem with the config: names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem} ({fix})")
        self.key, self.problem, self.fix = key, problem, fix


class StructuredOutput(StrEnum):
    """How the grader's verdict comes back."""

    auto = "auto"
    """Probes an OpenAI-compatible server once per run; else LangChain picks from the model's profile."""
    tool = "tool"
    """A forced ``GraderResponse`` tool call."""
    provider = "provider"
    """The provider's native JSON-schema output."""
    named = "named"
    """``GraderResponse`` forced by name once the grader stops calling evidence tools."""
    json = "json"
    """The schema in the prompt, ``json_object`` output, sent back to fix."""


class Checkpointer(StrEnum):
    """Where the agent's checkpoints go."""

    sqlite = "sqlite"
    memory = "memory"
    postgres = "postgres"


class KeepCheckpoints(StrEnum):
    """Which checkpoints of a task's thread stay once the task has ended with a verdict."""

    latest = "latest"
    """Only the latest, holding the thread's whole state: enough to continue it."""
    all = "all"
    """Every step's, for going back to an earlier step."""


class Isolation(StrEnum):
    """How generated code is isolated (``rubric_runner.sandbox``; ``rubric-runner doctor`` says what works here)."""

    auto = "auto"
    """bubblewrap when it works, else Linux namespaces when root, else refuse to run the code."""
    bwrap = "bwrap"
    """bubblewrap only (refuse when it cannot run)."""
    namespaces = "namespaces"
    """Linux namespaces, root only (refuse otherwise)."""
    none = "none"
    """No isolation: the code runs with this user's access (a warning on the console and in events)."""


@dataclass
class ModelConfig:
    """One chat model: the worker or the grader."""

    # "provider:model-id" as langchain's init_chat_model takes it, or "scripted:<name>"
    model: str = MISSING
    # sampling temperature; null leaves the provider default
    temperature: Optional[float] = None
    # cap on output tokens per call; null leaves the provider default
    max_tokens: Optional[int] = None
    # seconds before one request times out
    timeout: Optional[float] = None
    # client-side retries of failed requests
    max_retries: Optional[int] = None
    # endpoint override, e.g. a local OpenAI-compatible server
    base_url: Optional[str] = None
    # scripted provider only: YAML file of replies (sections worker: and grader:)
    script: Optional[str] = None
    # any other keyword arguments for the provider's chat model class
    kwargs: Dict[str, Any] = field(default_factory=dict)
    # tools this model may call, by registered name or import path (module.tool) -> settings (null or a mapping)
    tools: Dict[str, Any] = field(default_factory=dict)
    # langchain middleware after the runner's own: a list of {_target_: dotted.path, ...arguments},
    # each built with Hydra's instantiate, e.g. {_target_: langchain.agents.middleware.ModelRetryMiddleware}
    middleware: List[Any] = field(default_factory=list)


@dataclass
class WorkerConfig(ModelConfig):
    """The deep agent that does the work."""

    # the worker's system prompt (from the prompt/worker group)
    system_prompt: str = ""


@dataclass
class GraderConfig(ModelConfig):
    """The LLM-as-a-judge that grades the worker's transcript."""

    # grading passes per rubric attempt; a positive integer
    max_iterations: int = 3
    # cap on the grader's model calls in one grading pass (evidence tool calls and retries of a
    # malformed verdict included); going over ends the run as grader_error
    max_model_calls: int = 10
    # grading instructions; null uses the library's built-in grader prompt
    system_prompt: Optional[str] = None
    # how the verdict comes back: auto (probes an OpenAI-compatible server once per run; else LangChain's
    # pick from the model profile), tool (a forced GraderResponse tool call), provider (native JSON-schema
    # output), named (GraderResponse forced by name once the grader stops calling evidence tools) or json
    # (the schema in the prompt, json_object output, sent back to fix)
    structured_output: StructuredOutput = StructuredOutput.auto
    # a verdict that covers fewer or other criteria than the rubric's lines counts as not satisfied
    # (status unsupported); false: it is only flagged
    strict_coverage: bool = False
    # dotted paths of callables called after every grading pass as fn(evaluation=..., task=...)
    on_evaluation: List[str] = field(default_factory=list)
    # dotted path of fn(messages) -> messages: the part of the worker's transcript the grader reads
    prepare_messages_for_grader: Optional[str] = None
    # dotted path of fn(state, iteration) -> mapping: extra fields of the grader's input state
    # (needs state_schema; it cannot set messages)
    build_grader_state: Optional[str] = None
    # dotted path of the grader agent's state schema, a TypedDict extending langchain's AgentState
    state_schema: Optional[str] = None
    # dotted path of the grader agent's runtime context schema
    context_schema: Optional[str] = None


@dataclass
class RubricConfig:
    """What to ask and what "done" means."""

    # short name, used in records and reports
    name: str = MISSING
    # the task message sent to the worker (unused when a dataset gives the tasks)
    task: str = ""
    # newline-separated criteria the grader checks (a dataset task may bring its own)
    text: str = MISSING
    # JSONL or YAML list of tasks: {id, task, rubric?, tools?: {tool: settings}, verify?: {tool: settings}},
    # or a built-in set by name (humaneval); null = the one task above
    dataset: Optional[str] = None
    # the dataset's tasks to run: task ids and start:stop slices of its order, e.g. [0:10]; empty = all
    tasks: List[str] = field(default_factory=list)
    # hidden checks of the worker's first and final answers: tool name -> settings, as in grader.tools;
    # never shown to the worker or the grader (a dataset task's own verify settings merge over these)
    verify: Dict[str, Any] = field(default_factory=dict)
    # grader tools a pass must call before its verdict may be satisfied; a rubric line (or a passed
    # criterion) that names a grader tool requires that tool too
    evidence: List[str] = field(default_factory=list)


@dataclass
class RunConfig:
    """How one run executes."""

    # conversation thread id; null makes a fresh one per run (or reuses the run dir's on resume)
    thread_id: Optional[str] = None
    # continue the run recorded in this run dir from its checkpoint instead of starting over
    resume: bool = False
    # where the agent's checkpoints go: "sqlite" (checkpoints.sqlite in the run dir), "memory", or
    # "postgres" (the database at checkpoint_url or $RUBRIC_RUNNER_POSTGRES_URL)
    checkpointer: Checkpointer = Checkpointer.sqlite
    # PostgreSQL connection URL for checkpointer=postgres, without a password (that comes from
    # PGPASSWORD or ~/.pgpass); null: $RUBRIC_RUNNER_POSTGRES_URL
    checkpoint_url: Optional[str] = None
    # checkpoints kept of a task's thread once it ends with a verdict: "latest" (its final state, enough
    # to continue it) or "all" (every step's); an unfinished task keeps all, to resume from
    keep_checkpoints: KeepCheckpoints = KeepCheckpoints.latest
    # characters kept of each tool input and output in events.jsonl
    preview_chars: int = 400
    # print the live trail on the console (a progress line instead for multi-task runs)
    console: bool = True
    # tasks worked on at once
    concurrency: int = 8
    # times every task is run; records pass@k and pass^k
    repeats: int = 1
    # SQLite file of cached model responses (shared between runs and processes); null = no cache
    cache: Optional[str] = None
    # requests per second per provider, e.g. {anthropic: 2.0}; providers not listed are not limited
    rate_limits: Dict[str, float] = field(default_factory=dict)
    # billed tokens (worker + grader, every task) this run may spend in all; null = no budget
    budget_tokens: Optional[int] = None
    # estimated USD (at the sweep.prices rates) this run may spend in all; null = no budget
    budget_usd: Optional[float] = None


@dataclass
class LimitsConfig:
    """What one task may use; a task that reaches a limit ends as limit_exceeded."""

    # worker model calls per task (its subagents' and cached replies included); null = no limit
    worker_calls: Optional[int] = None
    # billed worker tokens per task (input + output; a cached reply costs none); null = no limit
    worker_tokens: Optional[int] = None
    # billed tokens per task, worker and grader together; null = no limit
    total_tokens: Optional[int] = None
    # wall-clock seconds per task, from its start (a resumed task starts the clock again); null = no limit
    wall_seconds: Optional[float] = None


@dataclass
class SweepConfig:
    """What a multirun sweep does once its jobs are done (see rubric_runner/sweep.py)."""

    # fail the sweep (exit 4) when the fraction of satisfied jobs is below this, 0..1;
    # null: the sweep fails when any job is not satisfied
    fail_under: Optional[float] = None
    # price table for the reports' cost estimates and USD budgets (USD per 1M tokens); null: conf/prices.yaml
    prices: Optional[str] = None
    # billed tokens the whole sweep (all its jobs, in any process or machine) may spend; null = no budget
    budget_tokens: Optional[int] = None
    # estimated USD (at the sweep.prices rates) the whole sweep may spend; null = no budget
    budget_usd: Optional[float] = None


@dataclass
class SandboxConfig:
    """How tools that run generated code (run_test_suite, plugin tools using rubric_runner.sandbox) isolate it."""

    # auto: bubblewrap when it works, else Linux namespaces when root, else refuse to run the code;
    # bwrap or namespaces: only that backend (refuse when it cannot run); none: no isolation (warns)
    isolation: Isolation = Isolation.auto


@dataclass
class Config:
    """The whole composed config."""

    worker: WorkerConfig = field(default_factory=WorkerConfig)
    grader: GraderConfig = field(default_factory=GraderConfig)
    rubric: RubricConfig = field(default_factory=RubricConfig)
    run: RunConfig = field(default_factory=RunConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    # extra notes copied into the result record, e.g. a sweep label
    tags: List[str] = field(default_factory=list)


def _package_data(relative: str) -> str:
    """Resolver ``${package_data:suites/find_duplicates.yaml}``: a file shipped with rubric_runner."""
    return str(DATA_DIR / relative)


def _unique_time() -> str:
    """Resolver ``${unique_time:}``: ``HH-MM-SS.mmm-xxxx``, the time to the millisecond and a random
    id, so dirs made at once differ and still sort by time."""
    return f"{datetime.now():%H-%M-%S.%f}"[:12] + f"-{secrets.token_hex(2)}"


def register_configs() -> None:
    """Register the schema and the resolvers ``package_data``, ``job_env``, ``submit_dir`` and
    ``unique_time`` (idempotent).

    ``${submit_dir:}`` is the working directory of the process that composed the config, cached, so a
    sweep dir built on it stays the submitting shell's on every machine that runs a job.
    ``${unique_time:}`` is cached per composed config, so a run dir keeps its name once chosen.
    """
    ConfigStore.instance().store(name="schema", node=Config)
    if not OmegaConf.has_resolver("package_data"):
        OmegaConf.register_new_resolver("package_data", _package_data)
    if not OmegaConf.has_resolver("job_env"):
        OmegaConf.register_new_resolver("job_env", job_env)
    if not OmegaConf.has_resolver("submit_dir"):
        OmegaConf.register_new_resolver("submit_dir", os.getcwd, use_cache=True)
    if not OmegaConf.has_resolver("unique_time"):
        OmegaConf.register_new_resolver("unique_time", _unique_time, use_cache=True)


_COMPOSING = threading.Lock()
"""Hydra's compose API keeps its state in a process-wide singleton: one compose at a time."""


def compose(overrides: list[str], return_hydra_config: bool = False) -> DictConfig:
    """The config ``rubric-runner OVERRIDES`` runs with, composed with Hydra's compose API."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    register_configs()
    with _COMPOSING, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=return_hydra_config)


def _unknown_keys(node: DictConfig, schema: type, prefix: str = "") -> list[tuple[str, list[str]]]:
    """``(key, known keys)`` for each key of the resolved ``node`` that the dataclass ``schema`` lacks."""
    hints = get_type_hints(schema)
    unknown = []
    for key in node:
        full = f"{prefix}.{key}" if prefix else str(key)
        if key not in hints:
            unknown.append((full, sorted(hints)))
        elif is_dataclass(hints[key]):
            unknown += _unknown_keys(node[key], hints[key], full)
    return unknown


def _check_base_url(url: Optional[str], key: str) -> None:
    parts = urlsplit(url or "")
    if url is not None and (parts.scheme not in ("http", "https") or not parts.hostname):
        raise ConfigError(key, f"{url!r} is not an http(s) URL", f"e.g. {key}=http://127.0.0.1:8000/v1, or null")


def _check_tool_settings(spec: dict[str, Any], key: str) -> None:
    """Each tool's settings in ``spec`` (``grader.tools``, ``rubric.verify``, ...) are a mapping or null."""
    for name, settings in spec.items():
        if settings is not None and not isinstance(settings, dict):
            raise ConfigError(f"{key}.{name}", f"settings must be a mapping or null, got {type(settings).__name__}",
                              f"e.g. {key}.{name}={{}}")


def postgres_url(configured: Optional[str]) -> Optional[str]:
    """The checkpoint database: ``run.checkpoint_url``, else ``$RUBRIC_RUNNER_POSTGRES_URL``."""
    return configured or os.environ.get(POSTGRES_URL_ENV) or None


def _check_postgres(configured: Optional[str]) -> None:
    if importlib.util.find_spec("langgraph.checkpoint.postgres") is None:
        raise ConfigError(
            "run.checkpointer", "postgres needs langgraph-checkpoint-postgres", "pip install 'rubric_runner[postgres]'"
        )
    if configured and (urlsplit(configured).password or "password=" in configured.lower()):
        raise ConfigError(
            "run.checkpoint_url", "passwords are not accepted in config",
            f"drop it from the URL and set PGPASSWORD, or give the whole URL in {POSTGRES_URL_ENV}",
        )
    if not postgres_url(configured):
        raise ConfigError(
            "run.checkpoint_url", "run.checkpointer=postgres needs a database",
            f"set {POSTGRES_URL_ENV}=postgresql://USER@HOST:5432/DB in the environment, or run.checkpoint_url",
        )


def validate(cfg: DictConfig) -> Config:
    """Resolve ``cfg`` against the schema and check what types cannot express."""
    secret = secret_entries(OmegaConf.to_container(cfg, resolve=False))
    if secret:
        raise ConfigError(
            secret[0][0], "secrets are not accepted in config", "set the provider's API key environment variable instead"
        )
    try:
        typed = OmegaConf.get_type(cfg) is Config  # composed by Hydra with the schema already
        merged = cfg if typed else OmegaConf.merge(OmegaConf.structured(Config), cfg)
        config: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many error types; all are config errors
        key = getattr(exc, "full_key", None) or "config"
        message = str(exc).splitlines()[0]
        raise ConfigError(key, message, "fix the value or the override") from None
    unknown = _unknown_keys(merged, Config)  # keys added with +KEY=VALUE that no schema declares
    if unknown:
        key, known = unknown[0]
        raise ConfigError(key, "unknown key", f"known keys here: {', '.join(known)}")
    for role in ("worker", "grader"):
        node: ModelConfig = getattr(config, role)
        if ":" not in node.model or node.model.startswith(":") or node.model.endswith(":"):
            raise ConfigError(
                f"{role}.model",
                f"{node.model!r} is not 'provider:model-id'",
                f"e.g. {role}.model=anthropic:claude-haiku-4-5",
            )
        _check_base_url(node.base_url, f"{role}.base_url")
        _check_tool_settings(node.tools, f"{role}.tools")
    _check_tool_settings(config.rubric.verify, "rubric.verify")
    if config.rubric.tasks and not config.rubric.dataset:
        raise ConfigError("rubric.tasks", "selects tasks of a dataset, but rubric.dataset is not set",
                          "set rubric.dataset, or drop rubric.tasks")
    for key, example in (("max_iterations", 3), ("max_model_calls", 10)):
        value = getattr(config.grader, key)
        if isinstance(value, bool) or value < 1:
            raise ConfigError(
                f"grader.{key}", f"must be a positive integer, got {value}", f"e.g. grader.{key}={example}"
            )
    required = ("text",) if config.rubric.dataset else ("task", "text")
    for key in required:
        if not str(getattr(config.rubric, key)).strip():
            raise ConfigError(f"rubric.{key}", "is empty", f"give rubric.{key} some text")
    for name in config.rubric.evidence:
        if name not in config.grader.tools:
            raise ConfigError(
                "rubric.evidence", f"{name!r} is not one of the grader's tools ({', '.join(config.grader.tools) or 'none'})",
                "name a tool under grader.tools, or add it there",
            )
    for key in ("concurrency", "repeats"):
        value = getattr(config.run, key)
        if isinstance(value, bool) or value < 1:
            raise ConfigError(f"run.{key}", f"must be a positive integer, got {value}", f"e.g. run.{key}=1")
    for provider, rate in config.run.rate_limits.items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
            raise ConfigError(f"run.rate_limits.{provider}", f"must be a positive number, got {rate!r}", "requests per second, e.g. 2.0")
    if config.run.preview_chars < 0:
        raise ConfigError("run.preview_chars", f"must be 0 or more, got {config.run.preview_chars}", "e.g. run.preview_chars=400")
    if config.run.checkpointer == Checkpointer.postgres:
        _check_postgres(config.run.checkpoint_url)
    fail_under = config.sweep.fail_under
    if fail_under is not None and not 0 <= fail_under <= 1:
        raise ConfigError("sweep.fail_under", f"must be a fraction from 0 to 1, got {fail_under}", "e.g. sweep.fail_under=0.8")
    _check_limits(config)
    return config


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
            raise ConfigError(key, f"must be positive, or null for no limit; got {value}", f"e.g. {key}={example}")
