"""One owner per run dir: whatever works in a run dir (a run, resume, continue, regrade) holds its lock.

The lock is an ``flock`` on ``.lock`` in the run dir, which names its holder (pid, host, command). The
kernel lets it go when the holder's process ends however it ends, so a lock left by a killed process is
simply taken over; a second owner while the first lives is refused, naming the first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from ..errors import UsageError, unwritable

LOCK_FILE = ".lock"
COMMAND_CHARS = 120
"""How much of the holder's command line the lock file keeps."""


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        data = {}
    pid, host, command = data.get("pid", "?"), data.get("host", "?"), data.get("command", "")
    return f"pid {pid} on {host}" + (f" ({command})" if command else "")


def _command() -> str:
    """What this process is, in a few words: ``rubric-runner resume outputs/...``."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    words = ["rubric-runner" if program in ("__main__.py", "rubric-runner") else program, *sys.argv[1:]]
    text = " ".join(words)
    return text if len(text) <= COMMAND_CHARS else text[:COMMAND_CHARS] + "..."


@contextlib.contextmanager
def run_dir_lock(run_dir: Path, key: str) -> Iterator[None]:
    """Hold ``run_dir``'s lock for the length of the block (making the dir if need be); ``key`` names the
    config key or argument the dir came from. A dir in use, or one that cannot be written, is a UsageError."""
    fix = f"choose a writable {key}" if key == "hydra.run.dir" else "use a run dir you may write to, or copy it"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise unwritable(exc, key, fix) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise unwritable(exc, key, fix) from None
            raise UsageError(key, f"{run_dir} is in use by {_holder(fd)}",
                             "wait for it to end, or stop it; one process at a time works in a run dir") from None
        about = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(about).encode(), 0)
        yield
    finally:
        os.close(fd)
