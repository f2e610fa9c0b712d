"""Process-wide settings a run needs, entered by the first active run and restored by the last.

Runs may go on at once in threads of one process (``rubric_runner.run``); each setting here is
shared by them and is back as it was once none is active.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any


class ProcessWide:
    """A process-wide setting: ``enter()`` when the first user arrives, ``restore(saved)`` when the last leaves."""

    def __init__(self, enter: Callable[[], Any], restore: Callable[[Any], None]) -> None:
        self._enter, self._restore = enter, restore
        self._lock = threading.Lock()
        self._users = 0
        self._saved: Any = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the setting for the length of the ``with`` block."""
        with self._lock:
            if self._users == 0:
                self._saved = self._enter()
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._restore(self._saved)
                    self._saved = None


FROZEN_HEAP = ProcessWide(gc.freeze, lambda _: gc.unfreeze())
"""Keep the garbage collector off the objects alive before the tasks start.

Imports, config and the compiled agent are scanned in every full collection while
tasks run; frozen, collections only look at what the tasks allocate. Unfrozen when
the last run's tasks end, they are collected as usual.
"""


async def _inline_unless_tracing(default: Any, ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    from langsmith.utils import tracing_is_enabled

    if tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def _inline_langsmith() -> None:
    import langsmith

    langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)


def _langsmith_defaults(_: Any) -> None:
    import langsmith

    langsmith.set_runtime_overrides()


NO_THREAD_HOPS_WITHOUT_TRACING = ProcessWide(_inline_langsmith, _langsmith_defaults)
"""Run LangSmith's run set-up and tear-down in place while tracing is off.

Every middleware model-call wrapper is ``@traceable``; by default each call sends
two small functions to the default thread pool even with tracing off, and the hops
cost far more CPU than the functions do. With tracing on, LangSmith's default stays.
"""


@contextlib.contextmanager
def tasks_running() -> Iterator[None]:
    """What many concurrent tasks need to stay cheap, for the length of a run's tasks."""
    with FROZEN_HEAP.held(), NO_THREAD_HOPS_WITHOUT_TRACING.held():
        yield


_LOOPS = threading.local()


def run_coroutine(coroutine: Any) -> Any:
    """Run ``coroutine`` to its end on this thread's one event loop, kept from run to run.

    Provider clients keep HTTP connections in a client shared per process (LangChain's OpenAI and
    Anthropic classes cache one per base URL and timeout), bound to the loop that opened them: a
    second run in the process (the jobs of a basic sweep, ``rubric_runner.run`` called twice) on a
    new loop would find them closed. Each call runs in a copy of the caller's context, as
    ``asyncio.run`` does.
    """
    runner = getattr(_LOOPS, "runner", None)
    if runner is None:
        runner = _LOOPS.runner = asyncio.Runner()
        if threading.current_thread() is threading.main_thread():
            atexit.register(runner.close)
    return runner.run(coroutine, context=contextvars.copy_context())
