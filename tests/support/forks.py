"""Real processes to signal, without paying each one's start-up: a server that has imported rubric_runner
and made one scripted run forks a child per command (a new interpreter spends seconds importing).

``Forks`` is the tests' side; ``python tests/support/forks.py`` is the server. Each child runs in a session of
its own (a signal to its process group reaches what it started, as Ctrl-C on a terminal does), with its
output in files; the server runs no thread of its own when it forks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Child:
    """A forked command: its pid (its process group's id too) and the files of its stdout and stderr."""

    pid: int
    out: Path
    err: Path


class Forks:
    """The server, started with ``env``; ``start`` forks a child, ``wait`` reaps it."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.logs = logs
        self.server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, env=env)
        assert self._ask({}) == {"ready": True}

    def _ask(self, request: dict) -> dict:
        if request:
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
        line = self.server.stdout.readline()
        assert line, "the fork server died"
        return json.loads(line)

    def start(self, argv: list[str], cwd: Path, api: bool = False) -> Child:
        """``rubric-runner ARGV`` in a child (``api``: ``rubric_runner.run(ARGV[1:], run_dir=ARGV[0])``)."""
        out, err = (Path(tempfile.mkstemp(dir=self.logs, suffix=suffix)[1]) for suffix in (".out", ".err"))
        reply = self._ask({"argv": [str(arg) for arg in argv], "cwd": str(cwd), "api": api, "out": str(out), "err": str(err)})
        return Child(reply["pid"], out, err)

    def poll(self, child: Child) -> int | None:
        """The child's exit code (minus the signal that ended it, as ``subprocess`` says), None while it runs."""
        return self._ask({"poll": child.pid})["returncode"]

    def wait(self, child: Child, timeout: float = 120) -> tuple[int, str, str]:
        """The child's exit code (as ``poll`` gives it), stdout and stderr; whatever it left running in its
        process group is killed."""
        deadline = time.monotonic() + timeout
        code = None
        while code is None:
            code = self.poll(child)
            if code is None:
                if time.monotonic() > deadline:
                    self.signal(child, signal.SIGKILL)
                    raise AssertionError(f"child {child.pid} still running after {timeout} s: {child.err.read_text()}")
                time.sleep(0.05)
        self.signal(child, signal.SIGKILL)
        return code, child.out.read_text(), child.err.read_text()

    @staticmethod
    def signal(child: Child, signum: int) -> None:
        """Send ``signum`` to the child's process group, if anything of it is left."""
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=30)


def _warm_up() -> None:
    """One scripted run: what a run imports and builds lazily is then in every child. Its event loop (and
    the loop's executor threads) is closed, so the server forks with no other thread."""
    import contextlib

    import rubric_runner
    from rubric_runner import environment

    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stdout(sys.stderr):
        rubric_runner.run(["worker=scripted", "grader=scripted", "rubric=code", "run.console=false"], Path(scratch) / "run")
    environment._LOOPS.runner.close()
    del environment._LOOPS.runner
    assert threading.active_count() == 1, threading.enumerate()


def _child(request: dict) -> int:
    """The child's work, in its own session, dir and files; its exit code."""
    os.setsid()
    os.chdir(request["cwd"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["out"], os.O_WRONLY), (2, request["err"], os.O_WRONLY)):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    if request["api"]:
        import rubric_runner

        run_dir, *overrides = request["argv"]
        return int(rubric_runner.run(overrides, run_dir).exit_code)
    from rubric_runner.cli import main

    sys.argv = ["rubric-runner", *request["argv"]]
    main()
    return 0


def _fork(request: dict) -> int:
    sys.stdout.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _child(request)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:  # as the interpreter ends on one: by SIGINT, after the traceback
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """Warm up, then answer each request line: fork a child (its pid), or poll one (its exit code, or None)."""
    _warm_up()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "poll" in request:
            pid, status = os.waitpid(request["poll"], os.WNOHANG)
            reply = {"returncode": os.waitstatus_to_exitcode(status) if pid else None}
        else:
            reply = {"pid": _fork(request)}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    # Ctrl-C must reach each child as KeyboardInterrupt, even when the tests' process started this server
    # with SIGINT ignored (an ignored signal is inherited, and Python then installs no handler of its own)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    serve()
