"""The bubblewrap backend: new namespaces, and a file system of /usr, Python and pytest, read-only.

The code sees a fresh /proc, a minimal /dev, a private tmpfs /tmp open to all (its work
dir is /tmp/sandbox) and, read-only, /usr, the Python installation, pytest's
site-packages and the sandbox's own child script: nothing of $HOME or the
project. It gets new user (when not root), pid, network (nothing but its own
loopback), ipc, uts and cgroup namespaces, dies with its parent and runs in a
new session. Run by root, bubblewrap keeps only the capabilities the child needs
to switch to a user of its own (``run.sandbox_user``), which drops them all.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).with_name("child.py")
CHILD_INSIDE = "/run/rubric_runner/sandbox/child.py"
TMP_BYTES = 64 * 1024 * 1024
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Top-level dirs that are symlinks into /usr on merged-/usr systems (bound as they are on others)."""
ROOT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL")
"""Kept when root runs bubblewrap, for the child to switch to its own user (which drops them) and, in a session,
to kill what a command left running in the sandbox's pid namespace."""
NOBODY = "65534"
PROBE_SECONDS = 10


def python() -> str:
    """The base interpreter (not a venv's launcher), as a real path."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _outside_usr(paths: list[str]) -> list[str]:
    """Real paths not under /usr (bound already), none inside another."""
    real = [os.path.realpath(path) for path in paths]
    kept = [path for path in dict.fromkeys(real) if path != "/usr" and not path.startswith("/usr/")]
    return [path for path in kept if not any(path.startswith(other + "/") for other in kept)]


def _ancestors(paths: list[str]) -> list[str]:
    """Every parent dir of ``paths``, top down, so bubblewrap creates them world-readable."""
    found: dict[str, None] = {}
    for path in paths:
        parts = Path(path).parts[1:-1]
        for depth in range(1, len(parts) + 1):
            found["/" + "/".join(parts[:depth])] = None
    return list(found)


def command(bwrap: str, readable: list[str]) -> list[str]:
    """The bubblewrap command line up to ``--``: namespaces, identity and file system.

    ``readable`` are host paths the code may read, bound read-only at the same
    path (with the Python installation they make the interpreter work).
    """
    if os.getuid() == 0:
        identity = ["--cap-drop", "ALL"] + [arg for cap in ROOT_CAPABILITIES for arg in ("--cap-add", cap)]
    else:
        identity = ["--unshare-user", "--disable-userns", "--uid", NOBODY, "--gid", NOBODY]
    namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                  "--hostname", "sandbox", "--die-with-parent", "--new-session"]
    system = ["--ro-bind", "/usr", "/usr"]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            system += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            system += ["--ro-bind", link, link]
    fresh = ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--perms", "1777", "--tmpfs", "/tmp"]
    bound = _outside_usr([sys.base_prefix, os.path.dirname(python()), *readable])
    dirs = [arg for path in _ancestors([*bound, CHILD_INSIDE]) for arg in ("--dir", path)]
    binds = [arg for path in bound for arg in ("--ro-bind", path, path)]
    child = ["--ro-bind", os.path.realpath(CHILD), CHILD_INSIDE]
    return [bwrap, *identity, *namespaces, *system, *fresh, *dirs, *binds, *child, "--"]


def version(bwrap: str) -> str:
    """``bwrap --version``'s answer, e.g. ``bubblewrap 0.8.0``."""
    completed = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=PROBE_SECONDS)
    return completed.stdout.strip() or completed.stderr.strip()


@functools.cache
def _probe(bwrap: str, uid: int) -> str | None:
    """Start the interpreter under the real command line once: why it fails, or None."""
    try:
        completed = subprocess.run(
            [*command(bwrap, []), python(), "-I", "-S", "-c", ""],
            capture_output=True, text=True, env={}, cwd="/", timeout=PROBE_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({bwrap}) does not start: {exc}"
    if completed.returncode != 0:
        said = (completed.stderr.strip().splitlines() or [f"exit code {completed.returncode}"])[-1]
        return f"bubblewrap ({bwrap}) does not work here: {said}"
    return None


def installed() -> bool:
    """Whether a ``bwrap`` is on PATH."""
    return shutil.which("bwrap") is not None


def unavailable() -> str | None:
    """Why bubblewrap cannot isolate code here (tried once per bwrap and user), or None."""
    found = shutil.which("bwrap")
    if found is None:
        return "bubblewrap is not installed (no bwrap on PATH)"
    return _probe(found, os.getuid())
