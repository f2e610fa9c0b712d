"""Shell commands on a workspace dir, in one sandbox kept for all of them (the sandbox backend's ``execute``).

A ``ShellSession`` starts the sandbox's child (``child.py``, session mode) once and sends it each command
in turn: the child copies the workspace into its private work dir, runs the command there under
``/bin/sh -c`` as the sandbox's user with its limits, kills whatever the command left running, and
mirrors the work dir back. So each command sees the workspace as the last one left it, as a fresh
sandbox would, while the sandbox's start (bubblewrap, an interpreter) is paid once per session rather
than once per command. A command that outlives its wall clock leaves the workspace as it was; a child
that stops answering is killed, and the next command starts a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from . import bwrap
from .isolation import UNISOLATED, bwrap_fix, choose, current_setting
from .run import Limits, describe_signal, launch, pytest_path, refused, sandbox_user

ANSWER_GRACE_SECONDS = 10.0
"""How long past a command's wall clock the child may take to copy the workspace back and answer."""
CHUNK = 1 << 16


class SessionEnded(Exception):
    """The child ended (or stopped answering) before it answered a command."""


class ShellSession:
    """One sandbox for the shell commands on ``workspace`` (a host dir), under the isolation setting in force
    when it starts; commands run one at a time. ``close()`` ends it (or use it as a context manager)."""

    def __init__(self, workspace: Path, limits: Limits | None = None) -> None:
        self.workspace, self.limits = workspace, limits or Limits()
        self.setting = current_setting()
        self.process: subprocess.Popen[bytes] | None = None
        self.backend: str | None = None
        self.inode: tuple[int, int] | None = None
        self.nonce = ""
        self.scratch: str | None = None
        self.pending = b""
        self.lock = threading.Lock()

    def __enter__(self) -> ShellSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(self, command: str, wall_seconds: float | None = None, output_chars: int = 30000) -> dict[str, Any]:
        """Run ``command`` on the workspace; ``run_command``'s result."""
        wall = min(wall_seconds or self.limits.wall_seconds, self.limits.wall_seconds)
        with self.lock:
            choice = choose(self.setting.mode)
            if choice.backend is None:
                assert choice.refusal is not None, "choose() says why no backend runs"
                return {**refused(choice.refusal, self.setting), "output": "", "truncated": False}
            if choice.backend == "none":
                self.setting.say("sandbox_unisolated", UNISOLATED)
            started = time.monotonic()
            try:
                answer = self._ask(choice.backend, {"command": command, "wall_seconds": wall, "output_chars": output_chars})
            except SessionEnded as exc:
                self._stop()
                return self._result(choice.backend, {"error": str(exc)}, started, output_chars)
            if answer.get("refused"):
                self._stop()
                return {**refused(f"{answer['refused']}. Fix: {bwrap_fix()}", self.setting), "output": "", "truncated": False}
            return self._result(choice.backend, answer, started, output_chars)

    def close(self) -> None:
        """End the sandbox (its child reads the end of its input and exits; killed if it does not)."""
        with self.lock:
            self._stop()

    def _result(self, backend: str, answer: dict[str, Any], started: float, output_chars: int) -> dict[str, Any]:
        output, code = answer.get("output", ""), answer.get("exit_code")
        flooded = answer.get("output_bytes", 0) >= self.limits.file_size_mb * 1024 * 1024
        if answer.get("timed_out"):
            killed: str | None = f"wall-clock limit of {answer['wall_seconds']}s exceeded"
        elif flooded:
            killed = f"output limit of {self.limits.file_size_mb} MiB exceeded"
        else:
            killed = describe_signal(code - 128) if code is not None and code > 128 else None
        result = {
            "output": output, "truncated": bool(answer.get("cut")) or flooded,
            "exit_code": code, "timed_out": bool(answer.get("timed_out")), "killed": killed,
            "duration_s": round(time.monotonic() - started, 3), "isolation": backend, "isolated": backend != "none",
        }
        if answer.get("error"):
            result["error"] = answer["error"]
        return result

    def _ask(self, backend: str, command: dict[str, Any]) -> dict[str, Any]:
        """Send one command to the child (started first if need be) and read its answer."""
        if not self._alive(backend):
            self._start(backend)
        assert self.process is not None and self.process.stdin is not None, "_start leaves a child, its stdin piped"
        nonce = secrets.token_hex(8)
        with contextlib.suppress(BrokenPipeError):  # it ended: what it said before (a refusal) is still to read
            self.process.stdin.write(json.dumps({**command, "nonce": nonce}).encode() + b"\n")
            self.process.stdin.flush()
        deadline = time.monotonic() + command["wall_seconds"] + ANSWER_GRACE_SECONDS
        line = ""
        while not line:  # a result line comes after a line break of its own
            line = self._line(deadline)
        for tag in (nonce, self.nonce):
            if line.startswith(tag):
                answer = json.loads(line[len(tag):])
                return {**answer, "wall_seconds": command["wall_seconds"]}
        raise SessionEnded("the sandbox answered out of turn")

    def _alive(self, backend: str) -> bool:
        """Whether the child runs, under ``backend``, on the dir now at the workspace's path."""
        if self.process is None or self.process.poll() is not None or self.backend != backend:
            return False
        stat = os.stat(self.workspace)
        return (stat.st_dev, stat.st_ino) == self.inode

    def _start(self, backend: str) -> None:
        self._stop()
        self.scratch = tempfile.mkdtemp(prefix="rubric-session-")
        workdir = Path(self.scratch) / "work"
        workdir.mkdir()
        os.chmod(workdir, 0o777)
        site = pytest_path()
        started = launch(backend, workdir, [site] if site else [])
        self.nonce, self.backend, self.pending = secrets.token_hex(8), backend, b""
        handle = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            stat = os.fstat(handle)
            self.inode = (stat.st_dev, stat.st_ino)
            request = {"mode": "session", "nonce": self.nonce, "isolation": backend, "workdir": started.workdir,
                       "parent_pid": started.parent_pid, "workspace_fd": handle, "import_paths": [site] if site else [],
                       "path": f"{os.path.dirname(bwrap.python())}:/usr/local/bin:/usr/bin:/bin", **vars(self.limits)}
            with open(Path(self.scratch) / "child.log", "wb") as log:
                self.process = subprocess.Popen(started.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                                env=started.env, cwd=workdir, start_new_session=True, pass_fds=(handle,))
        finally:
            os.close(handle)
        assert self.process.stdin is not None, "its stdin is piped"
        with contextlib.suppress(BrokenPipeError):  # it could not start: the first command's answer says why
            self.process.stdin.write(json.dumps({**request, "user": sandbox_user(self.process.pid)}).encode() + b"\n")
            self.process.stdin.flush()

    def _line(self, deadline: float) -> str:
        """The child's next line; ``SessionEnded`` when it ends or the deadline passes first."""
        assert self.process is not None and self.process.stdout is not None, "asked of a started child, its stdout piped"
        stdout = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                raise SessionEnded("the sandbox did not answer in time")
            chunk = os.read(stdout, CHUNK)
            if not chunk:
                self.process.wait()
                raise SessionEnded(f"the sandbox exited with code {self.process.returncode} before the command ended"
                                   f"{self._said()}")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def _said(self) -> str:
        """The last line the child wrote to its log, if any, as ``: LINE``."""
        if self.scratch is None:
            return ""
        log = Path(self.scratch) / "child.log"
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
        return f": {lines[-1]}" if lines else ""

    def _stop(self) -> None:
        if self.process is not None:
            assert self.process.stdin is not None and self.process.stdout is not None, "its stdin and stdout are piped"
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.process.stdout.close()
            self.process = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def run_command(command: str, workspace: Path, limits: Limits, output_chars: int = 30000) -> dict[str, Any]:
    """Run the shell ``command`` (``/bin/sh -c``) on a copy of the dir ``workspace``, as ``run_cases`` runs code.

    The copy is the command's work dir, on the sandbox's private tmpfs (so what it writes is bounded as
    code's files are); once the command ends the work dir is mirrored back into ``workspace``, no symlink
    followed. A command stopped at the wall-clock limit leaves ``workspace`` as it was. ``PATH`` has the
    Python interpreter first, and pytest's site-packages is on ``PYTHONPATH``.

    Returns ``output`` (the last ``output_chars`` characters of its combined output), ``truncated``,
    ``exit_code`` (128 + N when signal N ended it), ``timed_out``, ``killed`` (a reason or null),
    ``duration_s``, ``isolation`` and ``isolated``; ``error`` when the workspace could not be copied;
    ``refused`` when nothing may run under the current setting.
    """
    with ShellSession(workspace, limits) as session:
        return session.run(command, output_chars=output_chars)


def run_on_files(files: dict[str, str], command: str, limits: Limits, output_chars: int = 30000) -> dict[str, Any]:
    """``run_command`` on a fresh dir holding ``files`` (``/path`` -> text), nothing kept of it afterwards; its
    result with ``ok``: the command exited 0 with no limit reached. A path out of the dir is refused."""
    with tempfile.TemporaryDirectory(prefix="rubric-files-") as scratch:
        root = Path(scratch).resolve()
        for path, text in files.items():
            target = (root / path.lstrip("/")).resolve()
            if not target.is_relative_to(root) or target == root:
                return {**refused(f"a file outside the work dir: {path}", current_setting()), "output": "", "truncated": False}
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        result = run_command(command, root, limits, output_chars)
    return {**result, "ok": result.get("exit_code") == 0 and not result.get("killed") and not result.get("error")
            and not result.get("refused")}
