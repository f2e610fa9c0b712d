"""Middleware for the grader sub-agent: its structured-output strategy and its per-pass call cap."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware, ModelRequest, ModelResponse
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy

from .config import GraderConfig


class FixedStrategy(AgentMiddleware):
    """Replaces LangChain's pick of structured-output strategy with one fixed strategy."""

    def __init__(self, response_format: ToolStrategy | ProviderStrategy) -> None:
        super().__init__()
        self.response_format = response_format

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(request.override(response_format=self.response_format))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(request.override(response_format=self.response_format))


def grader_middleware(node: GraderConfig) -> list[Any]:
    """``grader_middleware`` for ``RubricMiddleware``.

    ``grader.max_model_calls`` caps the calls of one grading pass (going over is a grader error);
    ``grader.structured_output`` is ``auto`` (LangChain picks from the model profile), ``tool`` (a
    forced ``GraderResponse`` tool call) or ``provider`` (the provider's native JSON-schema output).
    """
    from deepagents.middleware.rubric import GraderResponse

    middleware: list[Any] = [ModelCallLimitMiddleware(run_limit=node.max_model_calls, exit_behavior="error")]
    if node.structured_output != "auto":
        kind = ToolStrategy if node.structured_output == "tool" else ProviderStrategy
        middleware.append(FixedStrategy(kind(GraderResponse)))
    return middleware
