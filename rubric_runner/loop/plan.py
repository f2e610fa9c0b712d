"""A run's plan: everything the run needs, decided before the first model call.

``prepare`` reads and checks the config (every problem a user can fix is one ``UsageError`` raised
here), loads the tasks with their own tool settings and hidden checks, resolves the tools and what
config plugs into the loop, and builds the models. ``connect`` is the one step that talks to the
network before the tasks: every model's server answers, and ``auto`` probes how the grader's
verdict can come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..config.fingerprint import fingerprint
from ..config.schema import Checkpointer, Config
from ..config.validate import subagent_model, validate
from ..errors import check_database
from ..grader.middleware import GraderPass
from ..grader.probe import choose_strategy
from ..models.build import build_chat_model, is_scripted, split_model
from ..models.preflight import check_keys, check_servers
from ..models.quirks import ToolCallContent
from ..models.replies import ReplyCheck, ReplyRetry
from ..observe.recorder import TaskCallback, ToolCallWatch
from ..plugins.extensions import LoopExtensions
from ..plugins.manager import Plugins
from ..plugins.registry import ToolRegistry, validate_settings
from ..records import CHECKPOINT_FILE, GraderInfo, ModelInfo, RubricInfo, RunHeader, thread_home
from ..redaction import redact_config
from ..tasks.checks import Check, resolve_checks
from ..tasks.sets import Task, load_tasks
from ..tasks.trajectory import Rules
from .arms import grading_passes
from .cells import Cell, new_cells, regraded_cells, turn_cell
from .followup import FollowUp, check_thread_kept
from .request import Regrading


@dataclass
class Plan:
    """What a run works on and with."""

    config: Config
    run_dir: Path
    home: Path
    """Where the threads' checkpoints live: the run dir, or for a follow-up turn its thread's first run dir."""
    tasks: list[Task]
    registry: ToolRegistry
    worker_tools: list[Any]
    grader_tools: list[Any]
    checks: dict[str, list[Check | Rules]]
    extensions: LoopExtensions
    models: dict[str, Any]
    """The chat models by role (``worker``, ``grader``)."""
    cells: list[Cell]
    """Each task x repeat the run works on: a new run's, a follow-up turn's or a regrade's (``loop.cells``)."""
    sweep_dir: Path | None = None
    """A sweep's job: the sweep dir, which holds the sweep's budget ledger."""
    strategy: str | None = None
    """How the grader's verdict comes back, once ``connect`` has chosen it."""
    subagent_tools: dict[str, list[Any]] | None = None
    """Each of ``worker.subagents``' own tools, by its name (none: the worker's)."""

    def watched(self) -> bool:
        """Whether the console follows the run's one cell as it goes (else it shows the tasks' progress)."""
        return len(self.cells) == 1


def note_config(header: RunHeader, cfg: DictConfig, config: Config) -> None:
    """What ran, in the run's header: the resolved config, its fingerprint, the models, tools, rubric, tags."""
    resolved = redact_config(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    header.config, header.fingerprint = resolved, fingerprint(resolved, header.sources.overrides)
    worker, grader = config.worker, config.grader
    header.worker = ModelInfo(model=worker.model, scripted=is_scripted(worker), tools=sorted(worker.tools))
    header.grader = GraderInfo(
        model=grader.model, scripted=is_scripted(grader), tools=sorted(grader.tools), max_iterations=grading_passes(config),
        max_model_calls=grader.max_model_calls, structured_output=str(grader.structured_output),
    )
    header.rubric = RubricInfo(name=config.rubric.name, text=config.rubric.text, task=config.rubric.task)
    header.tags = list(config.tags)


def prepare(cfg: DictConfig, header: RunHeader, run_dir: Path, work: FollowUp | Regrading | None = None,
            sweep_dir: Path | None = None, roles: tuple[str, ...] | None = None) -> Plan:
    """The plan of ``work`` (a new run, a follow-up turn or a regrade) of ``cfg`` in ``run_dir``, with the
    models of ``roles`` (by default the worker's and the grader's; a regrade's grader's alone); fills the run's
    ``header``. Raises ``UsageError`` for whatever the user must fix."""
    config = validate(cfg)
    note_config(header, cfg, config)
    tasks = load_tasks(config)
    if isinstance(work, FollowUp):
        check_thread_kept(config)
        tasks = [work.task(tasks)]
        cells = [turn_cell(work, tasks[0], run_dir)]
    elif isinstance(work, Regrading):
        cells = regraded_cells(work, tasks, run_dir)
    else:
        cells = new_cells(tasks, config.run.repeats, run_dir, config.run.thread_id)
    if roles is None:
        roles = ("grader",) if isinstance(work, Regrading) else ("grader", "worker")
    registry = ToolRegistry(Plugins.load())
    rubric = config.rubric.name
    grader_tools = registry.resolve(config.grader.tools, "grader", rubric)
    worker_tools = registry.resolve(config.worker.tools, "worker", rubric)
    subagent_tools = {spec.name: registry.resolve(dict.fromkeys(spec.tools), f"worker.subagents[{index}]", rubric)
                      for index, spec in enumerate(config.worker.subagents) if spec.tools}
    for task in tasks:
        for name, settings in task.tools.items():
            key = f"rubric.dataset[{task.index}].tools.{name}"
            validate_settings(registry.find(name, key).tool, settings, key, rubric)
    checks = resolve_checks(registry, config.rubric, tasks)
    grader_own = {GraderPass.__name__, *GraderPass.replaces, ReplyRetry.__name__, ToolCallWatch.__name__}
    worker_own = {ToolCallContent.__name__, ReplyRetry.__name__, ToolCallWatch.__name__}
    extensions = LoopExtensions(config, registry.plugins, grader_own, worker_own)
    check_keys(config, roles)
    home = work.home if isinstance(work, FollowUp) else run_dir
    # a regrade's models go on from the graded run's (a scripted grader: from its place in its script)
    goes_on_from = (work.after or thread_home(work.source)) if isinstance(work, Regrading) else None
    models = build_models(config, roles, home, goes_on_from)
    if config.run.checkpointer == Checkpointer.sqlite:
        path = home / CHECKPOINT_FILE
        check_database(path, "run.checkpointer", f"restore {path} from a copy, or move it aside and resume: the "
                       "finished tasks keep their records, the others run again from the start")
    return Plan(config, run_dir, home, tasks, registry, worker_tools, grader_tools, checks, extensions, models,
                cells, sweep_dir, subagent_tools=subagent_tools)


def build_models(config: Config, roles: tuple[str, ...], home: Path, goes_on_from: Path | None = None) -> dict[str, Any]:
    """The chat models of ``roles``, with the run's response cache and rate limiters (no network yet), each
    call handed to the recorder and the guard of the task at hand (the guard refuses one past a limit), and
    a reply that is no answer failed (``ReplyCheck``); with the worker, each subagent's (``subagent:NAME``),
    a scripted one replaying its section of the worker's script."""
    from langchain_core.rate_limiters import InMemoryRateLimiter

    extras: dict[str, Any] = {"callbacks": [TaskCallback("recorder"), TaskCallback("guard", raise_error=True), ReplyCheck()]}
    if config.run.cache:
        from ..models.cache import SQLiteResponseCache

        extras["cache"] = SQLiteResponseCache(config.run.cache)
    limiters = {provider: InMemoryRateLimiter(requests_per_second=rate, check_every_n_seconds=0.01, max_bucket_size=1)
                for provider, rate in config.run.rate_limits.items()}
    models = {}
    for role in roles:
        node = getattr(config, role)
        provider = split_model(node.model)[0]
        own = {**extras, **({"rate_limiter": limiters[provider]} if provider in limiters else {})}
        models[role] = build_chat_model(node, role, home, own, goes_on_from=goes_on_from)
    for spec in config.worker.subagents if "worker" in roles else ():
        node = subagent_model(config.worker, spec.model)
        provider = split_model(node.model)[0]
        own = {**extras, **({"rate_limiter": limiters[provider]} if provider in limiters else {})}
        models[f"subagent:{spec.name}"] = build_chat_model(node, "worker", home, own, section=spec.name)
    return models


def connect(plan: Plan, header: RunHeader) -> None:
    """The network step before any task: each model's key is set and its server answers (pre-flight), and
    the grader's strategy is chosen (``auto`` probes an OpenAI-compatible server); noted in ``header``."""
    check_servers(plan.config, tuple(plan.models))
    grader = plan.models.get("grader")
    if grader is not None:
        plan.strategy, header.grader.probe = choose_strategy(plan.config.grader, grader, plan.grader_tools)
        header.grader.strategy = plan.strategy
