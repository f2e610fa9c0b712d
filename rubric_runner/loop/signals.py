"""SIGINT, SIGTERM and SIGUSR2 for a run started from the command line: stop at a checkpoint, or at once.

SIGUSR2 is what submitit sends a SLURM job before its time limit (and SLURM sends SIGTERM at the limit):
the run then stops at its next checkpoint and records itself ``interrupted``, to be resumed."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..records import ExitCode

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR2)
"""Ctrl-C, a kill or a scheduler's cancel, and a cluster's time-limit warning."""
SWEEP_STOP_FILE = ".stop"
"""Written in a sweep dir by Ctrl-C of the sweep (``SweepStop``), holding the signal's name: each job, in
whatever process or machine it runs, stops at its next checkpoint, and one that begins after it stops at once."""


class StopRequested(Exception):
    """Raised inside a task at a checkpoint after SIGINT/SIGTERM asked the run to stop."""


class StopRequest:
    """The first stop signal asks every task to stop at its next checkpoint, so no finished step is lost.

    A second one calls the run's ``stop_now`` (which records the run as interrupted) and exits
    with 130 at once; steps in flight are redone on resume. Only the command line installs it
    (``installed()``, on the main thread); a run given one checks it at each checkpoint.
    """

    signals: tuple[signal.Signals, ...] = STOP_SIGNALS

    def __init__(self, marker: Path | None = None) -> None:
        self.signal_name: str | None = None
        self.marker = marker
        """A sweep's job: the sweep's ``SWEEP_STOP_FILE``, which asks for a stop as a signal does."""
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
        """Raise StopRequested if a stop was asked for, by a signal or the sweep's marker."""
        if self.signal_name is None and self.marker is not None and self.marker.is_file():
            self.signal_name = self.marker.read_text(encoding="utf-8").strip() or "SIGINT"
        if self.signal_name is not None:
            raise StopRequested(f"{self.signal_name}: stopped at a checkpoint")

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handle ``STOP_SIGNALS`` for the length of the block (on the main thread; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {signum: signal.signal(signum, self) for signum in self.signals}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


class SweepStop(StopRequest):
    """Ctrl-C in the process that drives a sweep, while its launcher runs the jobs (in other processes with
    joblib, on other machines with Ray): the first writes ``marker`` (``SWEEP_STOP_FILE``), so every job stops
    at its next checkpoint as a run does, recorded ``interrupted``, and the launcher collects them; a second
    raises KeyboardInterrupt, the launcher's way to stop at once. The basic launcher's job handles Ctrl-C itself
    while it runs."""

    signals = (signal.SIGINT,)
    marker: Path

    def __init__(self, marker: Path, say: Callable[[str], None]) -> None:
        super().__init__(marker)
        self._say = say

    def __call__(self, signum: int, frame: Any) -> None:
        if self.signal_name is not None:
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        self.marker.write_text(self.signal_name, encoding="utf-8")
        self._say(f"{self.signal_name}: stopping the sweep's jobs at their next checkpoint (send it again to stop at once)")
