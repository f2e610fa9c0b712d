"""Run candidate code against a case table or a pytest file in a separate, isolated interpreter."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import bwrap
from .isolation import (
    UNISOLATED,
    IsolationSetting,
    bwrap_fix,
    choose,
    current_setting,
)

SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL")
ISOLATED_WORKDIR = "/tmp/sandbox"
"""The code's work dir under bubblewrap and namespaces: on the fresh, private tmpfs over /tmp."""
REPORT_WINDOW_BYTES = 256 * 1024
"""How much of the end of the output is searched for the child's result line."""
SANDBOX_UIDS = 1_800_000_000
"""Root's sandboxes each run as a user of their own, this plus the host pid of the sandbox's process (at most
2**22): no account's, and no two live sandboxes share one, so each has its own process limit (the kernel
counts RLIMIT_NPROC per user) and none can signal another."""


def sandbox_user(pid: int) -> int:
    """The uid and gid that root's sandbox started as host process ``pid`` switches to."""
    return SANDBOX_UIDS + pid


@dataclass
class Limits:
    """Resource limits for one sandboxed execution."""

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_mb: int = 512
    processes: int = 32
    file_size_mb: int = 8
    output_tail_chars: int = 2000


def _read_end(path: Path, size: int) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - size))
        return handle.read().decode("utf-8", "replace")


def describe_signal(number: int) -> str:
    """What signal ``number`` ending the code most likely means."""
    reasons: dict[int, str] = {
        signal.SIGXCPU: "CPU time limit exceeded",
        signal.SIGKILL: "killed (CPU time hard limit or out of memory)",
        signal.SIGXFSZ: "output size limit exceeded",
        signal.SIGSEGV: "segmentation fault",
    }
    return reasons.get(number, signal.Signals(number).name)


def pytest_path() -> str | None:
    """The directory pytest is imported from (its site-packages), or None if it is not installed."""
    spec = importlib.util.find_spec("pytest")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def run_cases(code: str, function: str, cases: list[dict[str, Any]], limits: Limits) -> dict[str, Any]:
    """Run ``function`` from ``code`` on each case; return a structured result.

    The result always has ``ok``, ``passed``, ``failures``, ``timed_out``,
    ``killed`` (a reason or null), ``exit_code``, ``duration_s``,
    ``output_tail`` (the last characters of the combined output),
    ``isolation`` (the backend that ran the code: ``bwrap``, ``namespaces`` or
    ``none``; null when it was refused) and ``isolated``. When no backend can
    run the code under the current setting, nothing runs and ``refused`` says
    why and how to fix it.
    """
    return _run({"mode": "cases", "code": code, "function": function, "cases": cases}, limits)


def run_pytest(code: str, module: str, test_name: str, test_source: str, limits: Limits) -> dict[str, Any]:
    """Save ``code`` as ``<module>.py``, run the pytest file ``test_name`` against it; same result as ``run_cases``.

    pytest's own site-packages is exposed read-only inside the sandbox and put on its ``sys.path``.
    """
    site = pytest_path()
    if site is None:
        raise RuntimeError("pytest is not installed, so a pytest file cannot be run")
    request = {
        "mode": "pytest",
        "code": code,
        "module": module,
        "test_name": test_name,
        "test_source": test_source,
        "import_paths": [site],
    }
    return _run(request, limits)


@dataclass(frozen=True)
class Launch:
    """How to start the child for one backend."""

    argv: list[str]
    env: dict[str, str]
    workdir: str
    """The code's work dir, as the child sees it."""
    parent_pid: int
    """The child's parent, as the child sees it (it dies with it)."""


def launch(backend: str, workdir: Path, import_paths: list[str]) -> Launch:
    """How to start the child under ``backend`` with ``workdir`` as its host work dir."""
    if backend == "bwrap":  # the child's parent is bubblewrap's init, pid 1 of the new pid namespace
        command = bwrap.command(shutil.which("bwrap") or "bwrap", import_paths)
        return Launch([*command, bwrap.python(), "-I", "-S", bwrap.CHILD_INSIDE], {}, ISOLATED_WORKDIR, 1)
    env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
    inside = ISOLATED_WORKDIR if backend == "namespaces" else str(workdir)
    return Launch([sys.executable, "-I", "-S", str(bwrap.CHILD)], env, inside, os.getpid())


def refused(reason: str, setting: IsolationSetting) -> dict[str, Any]:
    """The result when nothing may run: says why and how to fix it; the run hears of it."""
    setting.say("sandbox_refused", f"the sandbox refused to run generated code: {reason}")
    return {
        "ok": False,
        "passed": [],
        "failures": [f"sandbox: refused to run the code: {reason}"],
        "refused": reason,
        "timed_out": False,
        "killed": None,
        "exit_code": None,
        "duration_s": 0.0,
        "output_tail": "",
        "isolation": None,
        "isolated": False,
    }


@dataclass(frozen=True)
class Ended:
    """How the child ended: its exit code, the end of its output, and whether a limit stopped it."""

    returncode: int
    output_end: str
    timed_out: bool
    flooded: bool
    duration: float


def _start(request: dict[str, Any], limits: Limits, backend: str) -> Ended:
    """Start the child under ``backend`` with ``request`` on its stdin, and wait for it within the wall limit."""
    with tempfile.TemporaryDirectory(prefix="rubric-sandbox-") as scratch:
        scratch_dir = Path(scratch)
        workdir = scratch_dir / "work"
        workdir.mkdir()
        os.chmod(workdir, 0o777)
        child = launch(backend, workdir, request.get("import_paths", []))
        request = {
            **request, "isolation": backend, "workdir": child.workdir, "parent_pid": child.parent_pid, **asdict(limits),
        }
        out_path = scratch_dir / "output.txt"
        started = time.monotonic()
        with out_path.open("wb") as output:
            process = subprocess.Popen(
                child.argv,
                stdin=subprocess.PIPE,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=child.env,
                cwd=workdir,
                start_new_session=True,
            )
            timed_out = False
            try:
                line = json.dumps({**request, "user": sandbox_user(process.pid)}, default=repr)
                process.communicate(line.encode(), timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        duration = round(time.monotonic() - started, 3)
        flooded = out_path.stat().st_size >= limits.file_size_mb * 1024 * 1024
        return Ended(process.returncode, _read_end(out_path, REPORT_WINDOW_BYTES), timed_out, flooded, duration)


def _run(request: dict[str, Any], limits: Limits) -> dict[str, Any]:
    setting = current_setting()
    choice = choose(setting.mode)
    if choice.backend is None:
        assert choice.refusal is not None, "choose() says why no backend runs"
        return refused(choice.refusal, setting)
    if choice.backend == "none":
        setting.say("sandbox_unisolated", UNISOLATED)
    nonce = secrets.token_hex(8)
    ended = _start({**request, "nonce": nonce}, limits, choice.backend)
    result = _interpret(ended.returncode, ended.output_end, nonce, ended.timed_out, ended.flooded, ended.duration, limits)
    if result.get("refused"):  # the namespace backend could not isolate, so nothing ran
        return refused(f"{result['refused']}. Fix: {bwrap_fix()}", setting)
    result.update(isolation=choice.backend, isolated=choice.backend != "none")
    return result


def _killed(ended: Ended, limits: Limits) -> str | None:
    """The limit that stopped the child, if one did."""
    if ended.timed_out:
        return f"wall-clock limit of {limits.wall_seconds}s exceeded"
    if ended.flooded:
        return f"output limit of {limits.file_size_mb} MiB exceeded"
    if ended.returncode > 128:
        return describe_signal(ended.returncode - 128)
    return None


def _interpret(
    returncode: int,
    output_end: str,
    nonce: str,
    timed_out: bool,
    flooded: bool,
    duration: float,
    limits: Limits,
) -> dict[str, Any]:
    result: dict[str, Any] = {"ok": False, "passed": [], "failures": []}
    marker = -1 if timed_out else output_end.rfind(nonce)
    if marker >= 0:
        try:
            result.update(json.loads(output_end[marker + len(nonce) :].splitlines()[0]))
            output_end = output_end[:marker].rstrip("\n")
        except (IndexError, json.JSONDecodeError):
            marker = -1
    killed = _killed(Ended(returncode, output_end, timed_out, flooded, duration), limits)
    if killed or marker < 0:
        result["ok"] = False
        result["failures"].append(f"sandbox: {killed or f'exited with code {returncode} before reporting'}")
    result.update(
        timed_out=timed_out,
        killed=killed,
        exit_code=returncode,
        duration_s=duration,
        output_tail=output_end[-limits.output_tail_chars :],
    )
    return result
