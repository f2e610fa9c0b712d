"""The assumption ``rubric_runner.compat.python`` makes, pinned by name: a function registered with
``at_exit_start`` runs when the interpreter starts to exit, before it joins the threads that are not daemons."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import threading
from rubric_runner.compat.python import at_exit_start

release = threading.Event()
threading.Thread(target=release.wait).start()  # not a daemon: the exit waits for it
at_exit_start(lambda: (print("exit started", flush=True), release.set()))
"""


def test_cpython_at_exit_start_runs_before_the_threads_are_joined():
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "exit started\n", "")
