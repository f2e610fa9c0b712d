"""What some servers need that the OpenAI API does not: text in place of null content."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from .build import split_model


class ToolCallContent(AgentMiddleware):
    """Sends a model message with no text (one that only calls tools, or only malformed ones) with a
    one-space text instead of ``content: null``.

    LangChain's OpenAI client writes such a message with null content, which the OpenAI API takes but
    llama-cpp-python's server refuses (HTTP 500, "Input should be a valid string"): every conversation
    that goes on after it would end there. Only what is sent changes, not the agent's state.
    """

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(filled_content(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(filled_content(request))


def filled_content(request: ModelRequest) -> ModelRequest:
    """``request`` with a one-space text in each model message that has none."""
    messages = [m.model_copy(update={"content": " "}) if isinstance(m, AIMessage) and not m.content else m
                for m in request.messages]
    return request.override(messages=messages)


def compatible_server(node: Any) -> bool:
    """Whether a model config points an ``openai:`` model at an OpenAI-compatible server of its own."""
    return split_model(node.model)[0] == "openai" and bool(node.base_url)
