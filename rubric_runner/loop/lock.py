"""One owner per dir: whatever works in a run dir (a run, resume, continue, regrade) holds its lock, and a sweep
holds its sweep dir's.

The lock is an ``flock`` on ``.lock`` in the run dir, which names its holder (pid, host, command). The
kernel lets it go when the holder's process ends however it ends, so a lock left by a killed process is
simply taken over (the block is told who held it last); a second owner while the first lives is refused,
naming the first. ``owner_alive`` tells a sweep whether a job's process is still going.
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


def _about(fd: int) -> dict:
    """What the lock file says of its last holder: ``pid``, ``host``, ``command`` (empty when nothing)."""
    try:
        return _about_text(os.pread(fd, 4096, 0))
    except OSError:
        return {}


def _about_text(said: bytes) -> dict:
    """What a lock file's text says of its holder (empty when nothing)."""
    try:
        data = json.loads(said or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says."""
    data = _about(fd)
    pid, host, command = data.get("pid", "?"), data.get("host", "?"), data.get("command", "")
    return f"pid {pid} on {host}" + (f" ({command})" if command else "")


def _command() -> str:
    """What this process is, in a few words: ``rubric-runner resume outputs/...``."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    words = ["rubric-runner" if program in ("__main__.py", "rubric-runner") else program, *sys.argv[1:]]
    text = " ".join(words)
    return text if len(text) <= COMMAND_CHARS else text[:COMMAND_CHARS] + "..."


@contextlib.contextmanager
def run_dir_lock(run_dir: Path, key: str) -> Iterator[dict]:
    """Hold ``run_dir``'s lock for the length of the block (making the dir if need be), yielding what the
    lock file said of its last holder (a process now gone; empty for a new dir); ``key`` names the config
    key or argument the dir came from. A dir in use, or one that cannot be written, is a UsageError; a
    UsageError raised in the block leaves the lock file as it was."""
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
                             "wait for it to end, or stop it; one process at a time works in a run or sweep dir") from None
        said = os.pread(fd, 4096, 0)
        about = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(about).encode(), 0)
        try:
            yield _about_text(said)
        except UsageError:  # refused before any work: the lock file names the holder before, as it did
            os.ftruncate(fd, 0)
            os.pwrite(fd, said, 0)
            raise
    finally:
        os.close(fd)


def owner_alive(run_dir: Path) -> bool | None:
    """Whether the process that last held ``run_dir``'s lock is still going: known only for a process of
    this host (None for another host's, or when the lock file names none); the calling process itself
    is not (what it ran there has returned)."""
    try:
        data = json.loads((run_dir / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    if not isinstance(pid, int) or data.get("host") != socket.gethostname():
        return None
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
