"""Builds the worker deep agent with RubricMiddleware from a validated config."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .config import Config
from .grading import grader_middleware
from .models import build_chat_model
from .tools import ToolRegistry


def build_agent(
    config: Config,
    registry: ToolRegistry,
    on_evaluation: Callable[[dict[str, Any]], None],
    checkpointer: Any,
) -> Any:
    """``create_deep_agent(worker, middleware=[RubricMiddleware(grader, ...)])``."""
    from langchain_core._api import LangChainBetaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)
        from deepagents import RubricMiddleware, create_deep_agent

        grader_tools = registry.resolve(config.grader.tools, "grader")
        worker_tools = registry.resolve(config.worker.tools, "worker")
        grader = build_chat_model(config.grader, "grader")
        worker = build_chat_model(config.worker, "worker")
        middleware = RubricMiddleware(
            model=grader,
            system_prompt=config.grader.system_prompt,
            tools=grader_tools,
            grader_middleware=grader_middleware(config.grader),
            max_iterations=config.grader.max_iterations,
            on_evaluation=on_evaluation,
        )
    return create_deep_agent(
        model=worker,
        tools=worker_tools,
        system_prompt=config.worker.system_prompt or None,
        middleware=[middleware],
        checkpointer=checkpointer,
    )
