"""Typed config schema (registered with Hydra's ConfigStore) and validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

PACKAGE_DIR = Path(__file__).resolve().parent
CONF_DIR = next(
    (p for p in (PACKAGE_DIR / "conf", PACKAGE_DIR.parent / "conf") if p.is_dir()),
    PACKAGE_DIR.parent / "conf",
)


class ConfigError(ValueError):
    """A user-fixable problem with the config: names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem} ({fix})")
        self.key, self.problem, self.fix = key, problem, fix


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
    # tools this model may call, by registered name -> settings (null or a mapping)
    tools: Dict[str, Any] = field(default_factory=dict)


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
    # grading instructions; null uses the library's built-in grader prompt
    system_prompt: Optional[str] = None


@dataclass
class RubricConfig:
    """What to ask and what "done" means."""

    # short name, used in records and reports
    name: str = MISSING
    # the task message sent to the worker (unused when a dataset gives the tasks)
    task: str = ""
    # newline-separated criteria the grader checks (a dataset task may bring its own)
    text: str = MISSING
    # JSONL or YAML list of tasks: {id, task, rubric?, tools?: {tool: settings}}; null = the one task above
    dataset: Optional[str] = None


@dataclass
class RunConfig:
    """How one run executes."""

    # conversation thread id; null makes a fresh one per run (or reuses the run dir's on resume)
    thread_id: Optional[str] = None
    # continue the run recorded in this run dir from its checkpoint instead of starting over
    resume: bool = False
    # where the agent's checkpoints go: "sqlite" (checkpoints.sqlite in the run dir) or "memory"
    checkpointer: str = "sqlite"
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


@dataclass
class SweepConfig:
    """What a multirun sweep does once its jobs are done (see rubric_runner/sweep.py)."""

    # fail the sweep (exit 4) when the fraction of satisfied jobs is below this, 0..1;
    # null: the sweep fails when any job is not satisfied
    fail_under: Optional[float] = None
    # price table for the reports' cost estimates (USD per 1M tokens); null: conf/prices.yaml
    prices: Optional[str] = None


@dataclass
class Config:
    """The whole composed config."""

    worker: WorkerConfig = field(default_factory=WorkerConfig)
    grader: GraderConfig = field(default_factory=GraderConfig)
    rubric: RubricConfig = field(default_factory=RubricConfig)
    run: RunConfig = field(default_factory=RunConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    # extra notes copied into the result record, e.g. a sweep label
    tags: List[str] = field(default_factory=list)


DATA_DIR = PACKAGE_DIR / "data"


def _package_data(relative: str) -> str:
    """Resolver ``${package_data:suites/find_duplicates.yaml}``: a file shipped with rubric_runner."""
    return str(DATA_DIR / relative)


def register_configs() -> None:
    """Register the schema and the ``package_data`` resolver (idempotent)."""
    ConfigStore.instance().store(name="schema", node=Config)
    if not OmegaConf.has_resolver("package_data"):
        OmegaConf.register_new_resolver("package_data", _package_data)


CHECKPOINTERS = ("sqlite", "memory")
SECRET_WORDS = ("api_key", "apikey", "secret", "password", "access_token", "authorization")


def validate(cfg: DictConfig) -> Config:
    """Resolve ``cfg`` against the schema and check what types cannot express."""
    try:
        typed = OmegaConf.get_type(cfg) is Config  # composed by Hydra with the schema already
        merged = cfg if typed else OmegaConf.merge(OmegaConf.structured(Config), cfg)
        config: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many error types; all are config errors
        key = getattr(exc, "full_key", None) or "config"
        message = str(exc).splitlines()[0]
        raise ConfigError(key, message, "fix the value or the override") from None
    for role in ("worker", "grader"):
        node: ModelConfig = getattr(config, role)
        if ":" not in node.model or node.model.startswith(":") or node.model.endswith(":"):
            raise ConfigError(
                f"{role}.model",
                f"{node.model!r} is not 'provider:model-id'",
                f"e.g. {role}.model=anthropic:claude-haiku-4-5",
            )
        for key in node.kwargs:
            if any(word in key.lower() for word in SECRET_WORDS):
                raise ConfigError(
                    f"{role}.kwargs.{key}",
                    "secrets are not accepted in config",
                    "set the provider's API key environment variable instead",
                )
        for name, settings in node.tools.items():
            if settings is not None and not isinstance(settings, dict):
                raise ConfigError(
                    f"{role}.tools.{name}",
                    f"settings must be a mapping or null, got {type(settings).__name__}",
                    f"e.g. {role}.tools.{name}={{}}",
                )
    iterations = config.grader.max_iterations
    if isinstance(iterations, bool) or iterations < 1:
        raise ConfigError(
            "grader.max_iterations",
            f"must be a positive integer, got {iterations}",
            "e.g. grader.max_iterations=3",
        )
    required = ("text",) if config.rubric.dataset else ("task", "text")
    for key in required:
        if not str(getattr(config.rubric, key)).strip():
            raise ConfigError(f"rubric.{key}", "is empty", f"give rubric.{key} some text")
    for key in ("concurrency", "repeats"):
        value = getattr(config.run, key)
        if isinstance(value, bool) or value < 1:
            raise ConfigError(f"run.{key}", f"must be a positive integer, got {value}", f"e.g. run.{key}=1")
    for provider, rate in config.run.rate_limits.items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
            raise ConfigError(f"run.rate_limits.{provider}", f"must be a positive number, got {rate!r}", "requests per second, e.g. 2.0")
    if config.run.checkpointer not in CHECKPOINTERS:
        raise ConfigError(
            "run.checkpointer",
            f"unknown checkpointer {config.run.checkpointer!r}",
            f"use one of {', '.join(CHECKPOINTERS)}",
        )
    fail_under = config.sweep.fail_under
    if fail_under is not None and not 0 <= fail_under <= 1:
        raise ConfigError("sweep.fail_under", f"must be a fraction from 0 to 1, got {fail_under}", "e.g. sweep.fail_under=0.8")
    return config
