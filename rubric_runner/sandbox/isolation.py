"""Which backend isolates the code: the setting (per run, in a context variable) and the choice."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from . import bwrap

ISOLATION_MODES = ("auto", "bwrap", "namespaces", "none")
INSTALL_FIX = (
    "install bubblewrap (apt install bubblewrap / dnf install bubblewrap), "
    "or set sandbox.isolation=none to run the code unisolated"
)
NAMESPACES_FIX = (
    "bubblewrap is installed but cannot make its namespaces here: allow unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), "
    "run where the container permits them, or set sandbox.isolation=none to run the code unisolated"
)
UNISOLATED = (
    "sandbox.isolation=none: generated code runs unisolated, "
    "with this user's access to files, network and processes"
)

Notify = Callable[[str, str], None]
"""``notify(event, message)``: ``sandbox_refused`` or ``sandbox_unisolated``, and a line for a person."""


@dataclass(frozen=True)
class IsolationSetting:
    """How code runs in the current context, and who hears about refusals and unisolated runs."""

    mode: str = "auto"
    notify: Notify | None = None

    def say(self, event: str, message: str) -> None:
        """Pass a notice on, if anyone listens."""
        if self.notify is not None:
            self.notify(event, message)


_SETTING: ContextVar[IsolationSetting] = ContextVar("rubric_runner_sandbox_isolation", default=IsolationSetting())


@contextlib.contextmanager
def isolation_setting(mode: str = "auto", notify: Notify | None = None) -> Iterator[None]:
    """Sandboxed code started inside this block runs under ``mode``; ``notify`` hears of refusals.

    The setting lives in a context variable, so each run has its own, even with
    several runs in one process; asyncio tasks, and the executor threads LangChain
    runs sync tools in, copy it.
    """
    if mode not in ISOLATION_MODES:
        raise ValueError(f"unknown isolation {mode!r}: use one of {', '.join(ISOLATION_MODES)}")
    token = _SETTING.set(IsolationSetting(mode, notify))
    try:
        yield
    finally:
        _SETTING.reset(token)


def current_setting() -> IsolationSetting:
    """The isolation setting in force here (``auto`` unless a run set another)."""
    return _SETTING.get()


def namespaces_unavailable() -> str | None:
    """Why the namespace backend cannot run here, or None."""
    if sys.platform != "linux":
        return "the namespace backend needs Linux"
    if os.getuid() != 0:
        return "the namespace backend needs root"
    return None


def bwrap_fix() -> str:
    """What to do when bubblewrap cannot isolate: install it, or, when it is installed, let it make namespaces."""
    return NAMESPACES_FIX if bwrap.installed() else INSTALL_FIX


def unavailable(backend: str) -> str | None:
    """Why ``backend`` cannot run code here, or None when it can."""
    if backend == "bwrap":
        return bwrap.unavailable()
    if backend == "namespaces":
        return namespaces_unavailable()
    return None


@dataclass(frozen=True)
class Choice:
    """The backend that will run the code, or why none will (with the fix)."""

    backend: str | None
    refusal: str | None = None


def choose(mode: str) -> Choice:
    """``auto``: bubblewrap if it works, else namespaces when root, else a refusal; others: that backend or a refusal."""
    if mode == "none":
        return Choice("none")
    if mode in ("bwrap", "namespaces"):
        problem = unavailable(mode)
        fix = bwrap_fix() if mode == "bwrap" else "use sandbox.isolation=auto (bubblewrap), or run as root"
        return Choice(mode) if problem is None else Choice(None, f"sandbox.isolation={mode}: {problem}. Fix: {fix}")
    problems = {backend: unavailable(backend) for backend in ("bwrap", "namespaces")}
    for backend, problem in problems.items():
        if problem is None:
            return Choice(backend)
    return Choice(None, f"no isolation is available: {problems['bwrap']}, and {problems['namespaces']}. Fix: {bwrap_fix()}")
