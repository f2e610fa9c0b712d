"""Run candidate code against a case table in a separate, locked-down interpreter."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CHILD = Path(__file__).with_name("sandbox_child.py")
SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL")


@dataclass
class Limits:
    """Resource limits for one sandboxed execution."""

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_mb: int = 512
    processes: int = 32
    file_size_mb: int = 8
    output_tail_chars: int = 2000


def _tail(path: Path, chars: int) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - chars * 4))
        text = handle.read().decode("utf-8", "replace")
    return text[-chars:]


def _describe_signal(number: int) -> str:
    reasons = {
        signal.SIGXCPU: "CPU time limit exceeded",
        signal.SIGKILL: "killed (CPU time hard limit or out of memory)",
        signal.SIGXFSZ: "output size limit exceeded",
        signal.SIGSEGV: "segmentation fault",
    }
    return reasons.get(number, signal.Signals(number).name)


def run_cases(code: str, function: str, cases: list[dict[str, Any]], limits: Limits) -> dict[str, Any]:
    """Run ``function`` from ``code`` on each case; return a structured result.

    The result always has ``ok``, ``passed``, ``failures``, ``timed_out``,
    ``killed`` (a reason or null), ``exit_code``, ``duration_s`` and
    ``output_tail`` (the last characters of the combined output).
    """
    nonce = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="rubric-sandbox-") as scratch:
        scratch_dir = Path(scratch)
        workdir = scratch_dir / "work"
        workdir.mkdir()
        os.chmod(workdir, 0o777)
        request = {
            "code": code,
            "function": function,
            "cases": cases,
            "nonce": nonce,
            "workdir": str(workdir),
            **asdict(limits),
        }
        env = {key: os.environ[key] for key in SAFE_ENV_KEYS if key in os.environ}
        out_path = scratch_dir / "output.txt"
        started = time.monotonic()
        with out_path.open("wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(CHILD)],
                stdin=subprocess.PIPE,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=workdir,
                start_new_session=True,
            )
            timed_out = False
            try:
                process.communicate(json.dumps(request, default=repr).encode(), timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        duration = round(time.monotonic() - started, 3)
        tail = _tail(out_path, limits.output_tail_chars)
        flooded = out_path.stat().st_size >= limits.file_size_mb * 1024 * 1024
    return _interpret(process.returncode, tail, nonce, timed_out, flooded, duration, limits)


def _interpret(
    returncode: int,
    tail: str,
    nonce: str,
    timed_out: bool,
    flooded: bool,
    duration: float,
    limits: Limits,
) -> dict[str, Any]:
    result: dict[str, Any] = {"ok": False, "passed": [], "failures": []}
    marker = tail.rfind(nonce)
    if marker >= 0 and not timed_out:
        line = tail[marker + len(nonce) :].splitlines()[0]
        result.update(json.loads(line))
        tail = tail[:marker].rstrip("\n")
    killed = None
    if timed_out:
        killed = f"wall-clock limit of {limits.wall_seconds}s exceeded"
    elif flooded:
        killed = f"output limit of {limits.file_size_mb} MiB exceeded"
    elif returncode > 128:
        killed = _describe_signal(returncode - 128)
    if killed or marker < 0:
        result["ok"] = False
        result["failures"].append(f"sandbox: {killed or f'exited with code {returncode} before reporting'}")
    result.update(
        timed_out=timed_out,
        killed=killed,
        exit_code=returncode,
        duration_s=duration,
        output_tail=tail,
    )
    return result
