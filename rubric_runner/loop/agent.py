"""Builds, once per run, the worker deep agent with RubricMiddleware and what it shares."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config.schema import Config
from ..grader.middleware import grader_middleware
from ..grader.strategies import ChosenStrategy, choose_strategy
from ..models.build import build_chat_model, is_scripted, split_model
from ..models.preflight import preflight
from ..models.quirks import ToolCallContent, compatible_server
from ..observe.recorder import ToolCallWatch
from ..plugins.extensions import LoopExtensions
from ..plugins.manager import Plugins
from ..records import GraderInfo, ModelInfo, RubricInfo, RunRecord
from ..tasks.sets import Task
from ..tools.registry import ToolRegistry, validate_settings


def note_what_ran(record: RunRecord, config: Config) -> None:
    """Copy what ran (models, tools, grader settings, rubric, tags) into a record."""
    worker, grader = config.worker, config.grader
    record.worker = ModelInfo(model=worker.model, scripted=is_scripted(worker), tools=sorted(worker.tools))
    record.grader = GraderInfo(
        model=grader.model, scripted=is_scripted(grader), tools=sorted(grader.tools), max_iterations=grader.max_iterations,
        max_model_calls=grader.max_model_calls, structured_output=str(grader.structured_output),
    )
    record.rubric = RubricInfo(name=config.rubric.name, text=config.rubric.text, task=config.rubric.task)
    record.tags = list(config.tags)


class AgentFactory:
    """What every task of a run shares (tools, models, response cache, rate limiters), and the agent built from it."""

    def __init__(self, config: Config, run_dir: Path, roles: tuple[str, ...] = ("grader", "worker")) -> None:
        self.config = config
        self.run_dir = run_dir
        self.registry = ToolRegistry(Plugins.load())
        self.grader_tools = self.registry.resolve(config.grader.tools, "grader")
        self.worker_tools = self.registry.resolve(config.worker.tools, "worker")
        self.verdict_strategy = ChosenStrategy()
        grader_own = [*grader_middleware(config.grader, self.verdict_strategy, config.rubric.evidence), ToolCallWatch()]
        worker_own = [*([ToolCallContent()] if compatible_server(config.worker) else []), ToolCallWatch()]
        self.extensions = LoopExtensions(config, self.registry.plugins, grader_own, worker_own)
        self.grader_middleware = [*grader_own, *self.extensions.grader_middleware]
        self.worker_middleware = [*worker_own, *self.extensions.worker_middleware]
        self.cache = None
        if config.run.cache:
            from ..models.cache import SQLiteResponseCache

            self.cache = SQLiteResponseCache(config.run.cache)
        preflight(config, roles)
        limiters = self._rate_limiters()
        models = {role: build_chat_model(getattr(config, role), role, run_dir, self._extras(role, limiters)) for role in roles}
        self.grader_model, self.worker_model = models.get("grader"), models.get("worker")
        self.strategy: str | None = None
        self.probe: dict[str, str] | None = None
        if self.grader_model is not None:
            self.strategy, self.probe = choose_strategy(config.grader, self.grader_model, self.grader_tools)
            self.verdict_strategy.use(self.strategy)

    def note_strategy(self, grader: GraderInfo) -> None:
        """Say in a record how this run's grader answers: the strategy, and what ``auto``'s probe found."""
        grader.strategy, grader.probe = self.strategy, self.probe

    def _rate_limiters(self) -> dict[str, Any]:
        from langchain_core.rate_limiters import InMemoryRateLimiter

        return {
            provider: InMemoryRateLimiter(requests_per_second=rate, check_every_n_seconds=0.01, max_bucket_size=1)
            for provider, rate in self.config.run.rate_limits.items()
        }

    def _extras(self, role: str, limiters: dict[str, Any]) -> dict[str, Any]:
        provider, _ = split_model(getattr(self.config, role).model)
        extras: dict[str, Any] = {}
        if self.cache is not None:
            extras["cache"] = self.cache
        if provider in limiters:
            extras["rate_limiter"] = limiters[provider]
        return extras

    def check_task_tools(self, tasks: list[Task]) -> None:
        """Check each task's own tool settings against the tools they configure."""
        for task in tasks:
            for name, settings in task.tools.items():
                key = f"rubric.dataset[{task.index}].tools.{name}"
                validate_settings(self.registry.find(name, key).tool, settings, key)

    def rubric_middleware(self, on_evaluation: Callable[[dict[str, Any]], None] | None, max_iterations: int) -> Any:
        """``RubricMiddleware`` with this run's grader, prompt, tools, grader middleware and hooks."""
        from langchain_core._api import LangChainBetaWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangChainBetaWarning)
            from deepagents import RubricMiddleware

            return RubricMiddleware(
                model=self.grader_model,
                system_prompt=self.config.grader.system_prompt,
                tools=self.grader_tools,
                grader_middleware=self.grader_middleware,
                max_iterations=max_iterations,
                on_evaluation=self.extensions.observing(on_evaluation),
                **self.extensions.grader_arguments,
            )

    def build(self, on_evaluation: Callable[[dict[str, Any]], None], checkpointer: Any) -> Any:
        """``create_deep_agent(worker, middleware=[RubricMiddleware(grader, ...), *worker.middleware])``."""
        from deepagents import create_deep_agent

        return create_deep_agent(
            model=self.worker_model,
            tools=self.worker_tools,
            system_prompt=self.config.worker.system_prompt or None,
            middleware=[self.rubric_middleware(on_evaluation, self.config.grader.max_iterations), *self.worker_middleware],
            checkpointer=checkpointer,
        )
