"""The hostile-code matrix: generated code that tries to get out of the sandbox, and what it achieved.

``run_matrix`` runs each case through ``rubric_runner.sandbox`` and records what the process
that started the sandbox saw meanwhile: connections to its loopback listener, datagrams to its
loopback "resolver", signals it received, files written in the home dir, processes left behind (its own:
those below it, which adopts its orphans, or with the case's marker), and how much its own peak memory grew.
The checks live in tests/sandbox/test_isolation.py. Only the standard library and the sandbox package are
used, so the same file runs as root inside pytest and, as a script, as an unprivileged user with
Debian's python3 (``python3 -I hostile.py LIB_DIR SETTINGS_JSON`` prints the outcomes as JSON).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

LIMITS = {"wall_seconds": 3, "cpu_seconds": 1, "memory_mb": 256}
OWN_LIMIT_FIRST = {
    "cpu_loop": {"wall_seconds": 30},
    "floods_output": {"wall_seconds": 30},
    "memory_hog": {"wall_seconds": 30, "cpu_seconds": 10},
}
"""Cases that must end by their own limit (CPU time, output size, memory): the other limits with room to
spare, so that on a loaded machine, where they get less than a core and page faults are slow, neither the wall
clock nor the CPU clock wins the race (zeroing 256 MB once took more than the matrix's one CPU second)."""
NEVER = "<never returned>"
SECRET_TEXT = "-----BEGIN FAKE PRIVATE KEY----- hostile matrix"
FAKE_KEY = "sk-hostile-matrix-FAKE-0123456789abcdef"
SANDBOX_PROCESS = b"rubric_runner/sandbox/child.py"
"""On the command line of every sandbox process: the child, and bubblewrap, which names it."""
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
SLEEPER = 'os.execv(sys.executable, [sys.executable, "-c", "import time\\nwhile True: time.sleep(1)", TARGET["marker"]])'

CASES = {
    "reads_home_secret": """
def f():
    try:
        return open(TARGET["secret"]).read()
    except OSError as exc:
        return type(exc).__name__
""",
    "writes_home": """
def f():
    try:
        with open(TARGET["home_target"], "w") as handle:
            handle.write("escaped")
        return "written"
    except OSError as exc:
        return type(exc).__name__
""",
    "connects_loopback": """
import socket

def f():
    try:
        socket.create_connection(("127.0.0.1", TARGET["port"]), timeout=1).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc)
""",
    "resolves_dns": """
import socket

QUERY = bytes.fromhex("1234010000010000000000000470797069036f72670000010001")  # A pypi.org

def f():
    outcome = []
    try:
        socket.getaddrinfo("pypi.org", 443)
        outcome.append("resolved")
    except OSError as exc:
        outcome.append(type(exc).__name__)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(QUERY, ("127.0.0.1", TARGET["dns_port"]))
        outcome.append("sent")
    except OSError as exc:
        outcome.append(type(exc).__name__ + ": " + str(exc))
    return outcome
""",
    "reads_parent_environ": """
import os

def f():
    try:
        parent = open("/proc/%d/environ" % TARGET["parent_pid"], "rb").read().decode("utf-8", "replace")
    except OSError as exc:
        parent = type(exc).__name__
    return [parent, sorted(os.environ)]
""",
    "signals_parent": """
import os, signal

def f():
    outcome = []
    for send in (lambda: os.kill(TARGET["parent_pid"], signal.SIGUSR1),
                 lambda: os.killpg(TARGET["parent_pgid"], signal.SIGUSR1)):
        try:
            send()
            outcome.append("sent")
        except OSError as exc:
            outcome.append(type(exc).__name__)
    return outcome
""",
    "kills_everyone": """
import os, signal

def f():
    os.kill(-1, signal.SIGKILL)
    return "still here"
""",
    "fork_bomb": """
import os

def f():
    while True:
        try:
            os.fork()
        except OSError:
            pass
""",
    "memory_hog": """
def f():
    hog = []
    while True:
        hog.append(bytearray(10**7))
""",
    "cpu_loop": """
def f():
    while True:
        pass
""",
    "floods_output": """
def f():
    while True:
        print("x" * 1_000_000)
""",
    "sleeps_past_wall_clock": """
import time

def f():
    while True:
        time.sleep(1)
""",
    "leaves_its_session": f"""
import os, sys

def f():
    os.setsid()  # out of the process group the wall clock kills
    {SLEEPER}
""",
    "daemon_outlives_it": f"""
import os, sys, time

def f():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            {SLEEPER}
        os._exit(0)
    time.sleep(0.5)
    return 1
""",
    "writes_marker": """
def f():
    with open(TARGET["marker_file"], "w") as handle:
        handle.write("the code ran")
    return 1
""",
}
EXPECTED = {"daemon_outlives_it": 1, "writes_marker": 1}
STARTED = "-started"
PARENT_DIES = f"""
import os, sys, time

def f():
    if os.fork() == 0:
        {SLEEPER}
    while True:
        time.sleep(1)
"""


def _processes() -> dict[int, tuple[int, str, bytes]]:
    """Every other process: pid -> (parent pid, state, command line)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or entry == str(os.getpid()):
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            found[int(entry)] = (int(stat[1]), stat[0], Path(f"/proc/{entry}/cmdline").read_bytes())
        except (OSError, IndexError):
            continue
    return found


def _below_me(pid: int, processes: dict[int, tuple[int, str, bytes]]) -> bool:
    while pid in processes:
        pid = processes[pid][0]
    return pid == os.getpid()


def processes_with(needle: bytes) -> list[int]:
    """Pids whose command line contains ``needle``."""
    return [pid for pid, (_, _, cmdline) in _processes().items() if needle in cmdline]


def left_behind(seconds: float, marker: bytes | None = None) -> list[int]:
    """Wait up to ``seconds`` for this process's sandbox processes (those below it: other processes' sandboxes
    are theirs), and any process with ``marker`` on its command line, to end; those still there. Call it
    inside ``adopting()``, where what escaped a sandbox's process tree is still below this process."""
    deadline = time.monotonic() + seconds
    while True:
        processes = _processes()
        left = [pid for pid, (_, _, cmdline) in processes.items()
                if (marker and marker in cmdline) or (SANDBOX_PROCESS in cmdline and _below_me(pid, processes))]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """Meanwhile this process is the subreaper of its descendants: one whose parent dies is re-parented to it
    rather than to init, so ``left_behind`` still finds it below this process. Adopted processes that have
    ended are reaped on the way out."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    before = ctypes.c_int()
    children = {pid for pid, (parent, _, _) in _processes().items() if parent == os.getpid()}
    if prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(before)) != 0 or prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    try:
        yield
    finally:
        prctl(PR_SET_CHILD_SUBREAPER, before.value)
        for pid, (parent, state, _) in _processes().items():
            if parent == os.getpid() and state == "Z" and pid not in children:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)


class Watch:
    """Whatever the hostile code could reach, set up by the process that starts the sandbox."""

    def __init__(self, home: str, scratch: str) -> None:
        self.marker = "rubric-hostile-" + secrets.token_hex(6)
        self.secret = Path(home, f".{self.marker}-secret")
        self.home_target = Path(home, f"{self.marker}-escaped.txt")
        self.marker_file = Path(scratch, f"{self.marker}-ran")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.resolver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.resolver.bind(("127.0.0.1", 0))
        self.resolver.setblocking(False)
        self.signals = 0
        self.seen_marker = False

    def target(self) -> dict:
        """What the hostile code is told about its surroundings."""
        return {
            "secret": str(self.secret), "home_target": str(self.home_target), "marker_file": str(self.marker_file),
            "port": self.listener.getsockname()[1], "dns_port": self.resolver.getsockname()[1],
            "parent_pid": os.getpid(), "parent_pgid": os.getpgid(0), "marker": self.marker,
        }

    def __enter__(self) -> Watch:
        self.secret.write_text(SECRET_TEXT)
        self.secret.chmod(0o600)
        self.previous = signal.signal(signal.SIGUSR1, self._signalled)
        self.bystander = subprocess.Popen(["/bin/sleep", "120"], **({"user": 65534} if os.getuid() == 0 else {}))
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGUSR1, self.previous)
        self.bystander.kill()
        self.bystander.wait()
        for path in (self.secret, self.home_target, self.marker_file):
            path.unlink(missing_ok=True)
        self.listener.close()
        self.resolver.close()

    def _signalled(self, *_) -> None:
        self.signals += 1

    def _look_for_marker(self, stop: threading.Event) -> None:
        while not stop.is_set() and not self.seen_marker:
            self.seen_marker = bool(processes_with(self.marker.encode()))
            time.sleep(0.02)

    def _connections(self) -> int:
        count = 0
        while True:
            try:
                self.listener.accept()[0].close()
                count += 1
            except BlockingIOError:
                return count

    def _datagrams(self) -> int:
        count = 0
        while True:
            try:
                self.resolver.recv(512)
                count += 1
            except BlockingIOError:
                return count

    def run(self, name: str, suite: str) -> dict:
        """Run one case; its result, how long it took, and what it reached."""
        from rubric_runner.sandbox import Limits, run_cases, run_pytest

        code = f"TARGET = {json.dumps(self.target())}\n{CASES[name]}"
        limits = Limits(**{**LIMITS, **OWN_LIMIT_FIRST.get(name, {})})
        self.signals, self.seen_marker = 0, False
        stop = threading.Event()
        looking = threading.Thread(target=self._look_for_marker, args=(stop,), daemon=True)
        looking.start()
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        if suite == "pytest":
            test = (f"from solution import f\n\n\ndef test_{name}():\n    got = f()\n"
                    f"    assert got == {EXPECTED.get(name, NEVER)!r}, repr(got)\n")
            result = run_pytest(code, "solution", f"test_{name}.py", test, limits)
        else:
            result = run_cases(code, "f", [{"name": name, "expected": EXPECTED.get(name, NEVER)}], limits)
        seconds = time.monotonic() - started
        time.sleep(0.05)  # a signal or a datagram in flight lands before it is counted
        stop.set()
        looking.join()
        return {
            "result": result,
            "seconds": round(seconds, 3),
            "connections": self._connections(),
            "datagrams": self._datagrams(),
            "signals": self.signals,
            "home_written": self.home_target.exists(),
            "secret_intact": self.secret.read_text() == SECRET_TEXT,
            "marker_file_written": self.marker_file.exists(),
            "bystander_alive": self.bystander.poll() is None,
            "peak_growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before,
            "seen_marker": self.seen_marker,
            "left_behind": left_behind(3.0, self.marker.encode()),
            "after_seconds": round(time.monotonic() - started - seconds, 3),
        }


def run_matrix(names: list[str], suite: str, isolation: str, home: str, scratch: str) -> dict:
    """Each case under ``isolation``: its outcome, plus every sandbox notice the run would hear."""
    from rubric_runner.sandbox import isolation_setting

    notices: list[list[str]] = []
    outcomes = {}
    with isolation_setting(isolation, lambda event, message: notices.append([event, message])), adopting():
        for name in names:
            with Watch(home, scratch) as watch:
                outcomes[name] = watch.run(name, suite)
    return {"outcomes": outcomes, "notices": notices}


def run_until_killed(isolation: str, marker: str) -> None:
    """Run code that starts a process and sleeps forever (wall clock 60 s), for the caller to kill us meanwhile.

    That process shows ``marker + STARTED`` on its command line (ours shows only ``marker``).
    """
    from rubric_runner.sandbox import Limits, isolation_setting, run_cases

    code = f"TARGET = {json.dumps({'marker': marker + STARTED})}\n{PARENT_DIES}"
    with isolation_setting(isolation):
        run_cases(code, "f", [{"name": "parent_dies", "expected": NEVER}], Limits(wall_seconds=60, cpu_seconds=5))


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    os.environ["OPENAI_API_KEY"] = FAKE_KEY  # a key in the environment of the process that starts the sandbox
    settings = json.loads(sys.argv[2])
    if settings.get("until_killed"):
        run_until_killed(settings["isolation"], settings["marker"])
    else:
        print(json.dumps(run_matrix(settings["names"], settings["suite"], settings["isolation"], settings["home"], settings["scratch"])))
