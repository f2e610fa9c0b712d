"""What rubric_runner takes from LangChain and LangSmith beyond their public APIs, in one place.

``auto`` takes LangChain's own pick of a structured-output strategy from a model's profile, which only
its agent factory's private helper makes; a process that opts in runs LangSmith's run set-up in place
while tracing is off (``environment``); a transcript leaves each message for pydantic-core to serialize,
as ``messages_to_dict`` would give it. Each assumption is pinned by ``tests/compat/test_langchain.py``.
"""

from __future__ import annotations

from typing import Any


def supports_provider_strategy(model: Any, tools: list[Any]) -> bool:
    """Whether LangChain would use the provider's native structured output for ``model`` with ``tools``."""
    from langchain.agents.factory import _supports_provider_strategy

    return bool(_supports_provider_strategy(model, tools=tools))


def transcript_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """``messages_to_dict(messages)`` to be written as JSON: each message's ``data`` the message itself, which
    pydantic-core serializes as its ``model_dump()``, without a dict built per message."""
    return [{"type": message.type, "data": message} for message in messages]


async def _inline_unless_tracing(default: Any, ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    from langsmith.utils import tracing_is_enabled

    if tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def inline_langsmith() -> None:
    """Run LangSmith's run set-up and tear-down in place while tracing is off (process-wide)."""
    import langsmith

    langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)


def langsmith_defaults(_: Any = None) -> None:
    """LangSmith's own behaviour again."""
    import langsmith

    langsmith.set_runtime_overrides()
