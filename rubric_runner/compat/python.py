"""CPython: a call at the start of the interpreter's exit, before it waits for the threads still running."""

from __future__ import annotations

import threading
from collections.abc import Callable


def at_exit_start(function: Callable[[], None]) -> None:
    """Call ``function`` when the interpreter starts to exit: before it joins the threads that are not
    daemons and before the ``atexit`` handlers (``threading._register_atexit``, which concurrent.futures
    uses to stop its workers)."""
    threading._register_atexit(function)  # type: ignore[attr-defined]  # private, in CPython since 3.9
