"""The process's environment: what rubric_runner reads of it (provider keys, what jobs elsewhere need),
and what a run needs of its process (one event loop per thread, and tweaks a process may opt in to).

A process that runs many tasks (the command line opts in with ``process_tweaks()``; a Python program may
too) changes three process-wide settings while tasks run, each for a reason below. Runs may go on at once
in threads of one process; each setting is entered by the first active run and is back as it was once
none is active. Without the opt-in, a run changes nothing of its process.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import gc
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .compat.langchain import inline_langsmith, langsmith_defaults

T = TypeVar("T")

API_KEY_ENV = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "baseten": ("BASETEN_API_KEY",),
}
"""Environment variables that hold each provider's key (the first is the one to set)."""

POSTGRES_URL_ENV = "RUBRIC_RUNNER_POSTGRES_URL"
"""The PostgreSQL URL for ``run.checkpointer=postgres`` when ``run.checkpoint_url`` is null."""

PLUGINS_ENV = "RUBRIC_RUNNER_PLUGINS"
"""Comma-separated entry-point plugin names to load; unset loads all, empty loads none."""

JOB_ENV = (
    *(name for names in API_KEY_ENV.values() for name in names),
    "OLLAMA_HOST", POSTGRES_URL_ENV, "PGPASSWORD", PLUGINS_ENV,
)
"""What a job run on another machine takes from the submitting shell (Ray: ``${job_env:}``)."""


def job_env() -> dict[str, str]:
    """The variables of ``JOB_ENV`` set in this environment, by name."""
    return {name: os.environ[name] for name in JOB_ENV if name in os.environ}


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

Imports, config and the compiled agent are scanned in every full collection while tasks run; frozen,
collections only look at what the tasks allocate. Unfrozen when the last run's tasks end.
"""

NO_THREAD_HOPS_WITHOUT_TRACING = ProcessWide(inline_langsmith, langsmith_defaults)
"""Run LangSmith's run set-up and tear-down in place while tracing is off.

Every middleware model-call wrapper is ``@traceable``; by default each call sends two small functions
to the default thread pool even with tracing off, and the hops cost far more CPU than the functions do.
"""

PROBES_SEEN: dict[Any, Any] = {}
"""What ``grader.structured_output=auto`` found of each server: the jobs of a basic sweep run in one
process, and probe a server once. Kept only while the process has opted in."""

_OPTED_IN: contextvars.ContextVar[bool] = contextvars.ContextVar("rubric_runner_process_tweaks", default=False)


@contextlib.contextmanager
def process_tweaks() -> Iterator[None]:
    """Opt in, for the length of the block, to the process-wide tweaks above."""
    token = _OPTED_IN.set(True)
    try:
        yield
    finally:
        _OPTED_IN.reset(token)
        if not _OPTED_IN.get():
            PROBES_SEEN.clear()


def remembered(memo: dict[Any, T], key: Any, make: Callable[[], T]) -> T:
    """``make()``, kept in ``memo`` under ``key`` while the process has opted in to its tweaks."""
    if not _OPTED_IN.get():
        return make()
    if key not in memo:
        memo[key] = make()
    return memo[key]


@contextlib.contextmanager
def tasks_running() -> Iterator[None]:
    """What many concurrent tasks need to stay cheap, for the length of a run's tasks (if opted in)."""
    if not _OPTED_IN.get():
        yield
        return
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
