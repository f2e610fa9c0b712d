"""Reports of runs still going: a sweep's, refreshed as its jobs end, and a multi-task run's own,
refreshed as its tasks end; both marked as in progress until the end.

A refresh reads only the records on disk and writes each file whole (temp file and rename), so a
reader never sees half a file. It happens at most every ``REFRESH_SECONDS``, and more seldom when
it takes long itself (so it costs at most about a fifth of the time), since each one reads every
record again. A run's own refreshes are made by a child process (``python -m
rubric_runner.report.live RUN_DIR TOTAL [PRICES]``), so what they read never stays in the run's memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..paths import PACKAGE_DIR
from ..records import collect
from . import Live, write_all

REFRESH_SECONDS = 5.0
"""The least time between two refreshes."""
REFRESH_SPACING = 4
"""And at least this many times as long as the last refresh took."""
LOCK_FILE = ".report.lock"
"""In a sweep dir: held while its files are written, and remembers the last refresh."""


def _due(last: dict[str, float], now: float) -> bool:
    return now - last.get("at", 0.0) >= max(REFRESH_SECONDS, REFRESH_SPACING * last.get("seconds", 0.0))


@contextlib.contextmanager
def sweep_lock(sweep_dir: Path) -> Iterator[dict[str, float]]:
    """Hold the sweep dir's lock (jobs that end at once, in any process on this machine, take turns);
    yields the last refresh (``at``, ``seconds``), to be updated in place."""
    with open(sweep_dir / LOCK_FILE, "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        try:
            last = json.loads(lock.read() or "{}")
        except ValueError:
            last = {}
        before = dict(last)
        yield last
        if last != before:
            lock.seek(0)
            lock.truncate()
            lock.write(json.dumps(last))


def refresh_sweep(sweep_dir: Path, prices: str | None, since: str | None, jobs_total: int | None) -> None:
    """Rewrite a sweep's summary and reports, marked as in progress, unless they were just refreshed."""
    with sweep_lock(sweep_dir) as last:
        started = time.time()
        if not _due(last, started):
            return
        jobs = collect(sweep_dir, since=since)
        if jobs:
            write_all(sweep_dir, jobs, prices=prices, live=Live(jobs=jobs_total))
        last.update(at=started, seconds=time.time() - started)


class RunReports:
    """A task set's own summary and reports in its run dir: refreshed as its tasks end (``task_ended``)
    by a child process, and written final by ``close`` once its record is."""

    def __init__(self, run_dir: Path, total: int, prices: str | None) -> None:
        self.run_dir = run_dir
        self.total = total
        self.prices = prices
        self.last: dict[str, float] = {"at": time.time()}
        self.thread: threading.Thread | None = None

    def _refresh(self) -> None:
        """Write the files marked as in progress, in a child process; wait for it to end."""
        started = time.time()
        command = [sys.executable, "-m", __name__, str(self.run_dir), str(self.total), *([self.prices] if self.prices else [])]
        # the child imports this very package, even from a source tree not installed; in a session
        # of its own, it is not stopped by the Ctrl-C meant for the run
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))}
        try:
            subprocess.run(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            print(f"warning: the run's report in {self.run_dir} was not refreshed: {exc}", file=sys.stderr, flush=True)
        self.last = {"at": started, "seconds": time.time() - started}

    def task_ended(self) -> None:
        """A task has its record: refresh, unless a refresh is under way or was just done."""
        if (self.thread is None or not self.thread.is_alive()) and _due(self.last, time.time()):
            self.last = {**self.last, "at": time.time()}
            self.thread = threading.Thread(target=self._refresh, daemon=True)
            self.thread.start()

    def close(self) -> None:
        """The run's record is final: wait for a refresh under way, then write the final files."""
        if self.thread is not None:
            self.thread.join()
        write_run(self.run_dir, self.prices, None)


def write_run(run_dir: Path, prices: str | None, live: Live | None) -> None:
    """A run's own summary and reports (``live``: marked as in progress); a failure is printed, not raised:
    a report must never end the run it reports on."""
    try:
        write_all(run_dir, collect(run_dir), prices=prices, live=live)
    except Exception as exc:
        print(f"warning: the run's report in {run_dir} was not written: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    write_run(Path(sys.argv[1]), sys.argv[3] if len(sys.argv) > 3 else None, Live(jobs=1, runs=int(sys.argv[2])))

