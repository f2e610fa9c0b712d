"""Process-wide settings for the length of a run's tasks: what many concurrent tasks need to stay cheap."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the garbage collector off the objects alive before the tasks start.

    Imports, config and the compiled agent are scanned in every full collection while
    tasks run; frozen, collections only look at what the tasks allocate. Unfrozen at
    the end, they are collected as usual.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _inline_unless_tracing(default: Any, ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    from langsmith.utils import tracing_is_enabled

    if tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


@contextlib.contextmanager
def no_thread_hops_without_tracing() -> Iterator[None]:
    """Run LangSmith's run set-up and tear-down in place while tracing is off.

    Every middleware model-call wrapper is ``@traceable``; by default each call sends
    two small functions to the default thread pool even with tracing off, and the hops
    cost far more CPU than the functions do. With tracing on, LangSmith's default stays.
    LangSmith's defaults are back when the tasks end.
    """
    import langsmith

    langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
    try:
        yield
    finally:
        langsmith.set_runtime_overrides()
