"""SIGINT, SIGTERM and SIGUSR2 for a run started from the command line: stop at a checkpoint, or at once.

SIGUSR2 is what submitit sends a SLURM job before its time limit (and SLURM sends SIGTERM at the limit):
the run then stops at its next checkpoint and records itself ``interrupted``, to be resumed."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..records import ExitCode

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR2)
"""Ctrl-C, a kill or a scheduler's cancel, and a cluster's time-limit warning."""


class StopRequested(Exception):
    """Raised inside a task at a checkpoint after SIGINT/SIGTERM asked the run to stop."""


class StopRequest:
    """The first stop signal asks every task to stop at its next checkpoint, so no finished step is lost.

    A second one calls the run's ``stop_now`` (which records the run as interrupted) and exits
    with 130 at once; steps in flight are redone on resume. Only the command line installs it
    (``installed()``, on the main thread); a run given one checks it at each checkpoint.
    """

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._say: Callable[[str], None] = lambda text: None
        self._stop_now: Callable[[str], None] = lambda reason: None

    def attach(self, say: Callable[[str], None], stop_now: Callable[[str], None]) -> None:
        """How the run in progress reports the first signal and records a stop at once."""
        self._say, self._stop_now = say, stop_now

    def __call__(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.signal_name is not None:
            self._stop_now(f"{name} twice: stopped without waiting for a checkpoint")
            os._exit(ExitCode.INTERRUPTED)
        self.signal_name = name
        self._say(f"{name}: stopping at the next checkpoint (send it again to stop at once)")

    def check(self) -> None:
        """Raise StopRequested if a stop was asked for."""
        if self.signal_name is not None:
            raise StopRequested(f"{self.signal_name}: stopped at a checkpoint")

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handle ``STOP_SIGNALS`` for the length of the block (on the main thread; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {signum: signal.signal(signum, self) for signum in STOP_SIGNALS}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
