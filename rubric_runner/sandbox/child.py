"""Runs inside the sandbox: isolate (namespaces backend), drop privileges, then test candidate code.

Started by ``run.py`` as ``python -I -S child.py`` (under bubblewrap, or
directly) with a JSON request on stdin. Uses the standard library only (and
pytest, from the request's ``import_paths``, in pytest mode). Prints one
result line tagged with the request's nonce on stdout.
"""

import ctypes
import json
import os
import resource
import signal
import sys
import traceback

CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x20, 0x1000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PR_SET_PDEATHSIG = 1
NOBODY = 65534
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
MAX_FAILURES, MAX_MESSAGE_CHARS = 50, 500


def _isolate(libc, exposed):
    """New network, mount and pid namespaces; fresh tmpfs over every shared scratch dir."""
    if libc.unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID) != 0:
        return False
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    covered = [path for path in WORLD_WRITABLE if os.path.isdir(path)]
    # the interpreter's own dir too (a venv's bin/), so code that starts sys.executable finds it
    _cover_and_expose(libc, covered, [sys.base_prefix, os.path.dirname(sys.executable), *exposed])
    return True


def _private_ancestor(path):
    """The first ancestor of ``path`` that others cannot enter (e.g. /root), or None."""
    parts = path.strip("/").split("/")
    ancestors = ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]
    return next((ancestor for ancestor in ancestors if not os.stat(ancestor).st_mode & 0o001), None)


def _cover_and_expose(libc, covered, needed):
    """Cover ``covered`` with empty tmpfs, then let the unprivileged user read ``needed`` (stdlib, pytest).

    The private ancestors of the needed paths (e.g. /root) are covered too.
    Needed paths that end up hidden (say a venv under /tmp or /root) are
    bound back read-only, from a handle opened before covering; everything
    else under the covered dirs stays hidden.
    """
    needed = [p for p in dict.fromkeys(needed) if not any(p.startswith(q + "/") for q in needed)]
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in needed if os.path.isdir(path)}
    private = [ancestor for path in needed if (ancestor := _private_ancestor(path))]
    for path in covered:
        libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64m,mode=1777")
    for path in dict.fromkeys(private):
        libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    hiding = [*covered, *private]
    for path, handle in handles.items():
        if any(path.startswith(top + "/") for top in hiding):
            os.makedirs(path, exist_ok=True)
            libc.mount(f"/proc/self/fd/{handle}".encode(), path.encode(), None, MS_BIND | MS_REC, None)
            libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
        os.close(handle)


def _limit(request):
    cpu = int(request["cpu_seconds"])
    memory = int(request["memory_mb"]) * 1024 * 1024
    output = int(request["file_size_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
    resource.setrlimit(resource.RLIMIT_NPROC, (int(request["processes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _drop_privileges(workdir, switch_user):
    os.makedirs(workdir, exist_ok=True)
    if switch_user and os.getuid() == 0:
        os.chown(workdir, NOBODY, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir


def _clip(text):
    text = str(text)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "..."


def _report(passed, failures):
    """The result: failure messages clipped and capped, so the report line stays small."""
    shown = [_clip(failure) for failure in failures[:MAX_FAILURES]]
    if len(failures) > MAX_FAILURES:
        shown.append(f"... and {len(failures) - MAX_FAILURES} more failures")
    return {"ok": not failures, "passed": passed, "failures": shown}


def _run_cases(request):
    namespace = {"__name__": "candidate"}
    try:
        exec(compile(request["code"], "<candidate>", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - any failure of candidate code is a result
        return _report([], [f"Failed to execute code: {type(exc).__name__}: {exc}"])
    function = namespace.get(request["function"])
    if not callable(function):
        return _report([], [f"Function {request['function']} is not defined"])
    passed, failures = [], []
    for case in request["cases"]:
        try:
            actual = function(*case.get("args", []), **case.get("kwargs", {}))
            if actual == case["expected"]:
                passed.append(case["name"])
            else:
                failures.append(f"{case['name']}: expected {case['expected']!r}, got {actual!r}")
        except BaseException as exc:  # noqa: BLE001
            failures.append(f"{case['name']}: {type(exc).__name__}: {exc}")
    return _report(passed, failures)


class _PytestCollector:
    """A pytest plugin that keeps each test's outcome."""

    def __init__(self):
        self.passed, self.failures = [], []

    @staticmethod
    def _message(report):
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            return crash.message.splitlines()[0]
        lines = [line for line in str(report.longrepr).splitlines() if line.strip()]
        return lines[-1].lstrip("E ") if lines else "failed"

    def pytest_collectreport(self, report):
        if report.failed:
            self.failures.append(f"collecting {report.nodeid or 'tests'}: {self._message(report)}")

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[-1]
        if report.when == "call" and report.passed:
            self.passed.append(name)
        elif report.failed:
            stage = "" if report.when == "call" else f" (in {report.when})"
            self.failures.append(f"{name}{stage}: {self._message(report)}")


def _run_pytest(request):
    """Save the candidate as ``<module>.py`` beside the test file and run pytest on that file."""
    with open(f"{request['module']}.py", "w", encoding="utf-8") as handle:
        handle.write(request["code"])
    with open(request["test_name"], "w", encoding="utf-8") as handle:
        handle.write(request["test_source"])
    with open("pytest.ini", "w", encoding="utf-8") as handle:
        handle.write("[pytest]\n")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.path[:0] = [os.getcwd()]
    sys.path.extend(request["import_paths"])
    import pytest

    collector = _PytestCollector()
    args = [request["test_name"], "-q", "--tb=short", "-p", "no:cacheprovider"]
    code = pytest.main(args, plugins=[collector])
    failures = list(collector.failures)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        failures.append("pytest collected no tests")
    elif code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not failures:
        failures.append(f"pytest ended with {pytest.ExitCode(code).name}")
    return _report(collector.passed, failures)


def _run_command(request):
    """Write the request's files into ``workspace/`` of the work dir and run its shell command there; ok when it exits 0.

    The command's output is the child's (its tail comes back with the result); ``python`` and ``python3`` are
    this interpreter, with pytest's site-packages on its path.
    """
    import subprocess

    workdir = os.path.join(os.getcwd(), "workspace")
    for path, text in request["files"].items():
        target = os.path.normpath(os.path.join(workdir, path.lstrip("/")))
        if not target.startswith(workdir + os.sep):
            return _report([], [f"refused a file outside the work dir: {path}"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
    tools = os.path.join(os.getcwd(), "bin")
    os.makedirs(tools, exist_ok=True)
    for name in ("python", "python3"):
        os.symlink(sys.executable, os.path.join(tools, name))
    env = {"PATH": f"{tools}:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(request["import_paths"]), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "LANG": "C.UTF-8"}
    sys.stdout.flush()
    code = subprocess.call(request["command"], shell=True, cwd=workdir, env=env, stdin=subprocess.DEVNULL)
    result = _report([], [] if code == 0 else [f"the command exited with code {code}"])
    result["command_exit_code"] = code
    return result


def _die_with_parent(libc, parent):
    """Be killed when ``parent`` dies (set after any change of user, which clears the setting)."""
    if sys.platform == "linux":
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (parent, 0):  # it died before the setting took effect (0: parent outside our pid namespace)
        os._exit(128 + signal.SIGKILL)


def _write_result(request, result):
    sys.stdout.write(f"\n{request['nonce']}{json.dumps(result, default=repr)}\n")
    sys.stdout.flush()


def _grandchild(request, libc, parent):
    # As pid 1 of its namespace this process ignores default-action signals, so exit explicitly.
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(128 + signal.SIGXCPU))
    _drop_privileges(request["workdir"], switch_user=request["isolation"] != "none")
    _die_with_parent(libc, parent)
    _limit(request)
    try:
        run = {"pytest": _run_pytest, "command": _run_command}.get(request["mode"], _run_cases)
        result = run(request)
    except BaseException:  # noqa: BLE001
        result = _report([], [traceback.format_exc(limit=3)])
    _write_result(request, result)
    os._exit(0)


def main():
    request = json.loads(sys.stdin.read())
    libc = ctypes.CDLL(None, use_errno=True)
    _die_with_parent(libc, request["parent_pid"])
    if request["isolation"] == "namespaces" and not _isolate(libc, request.get("import_paths", [])):
        problem = os.strerror(ctypes.get_errno())
        _write_result(request, {"refused": f"the namespace backend could not create namespaces ({problem})"})
        return
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _grandchild(request, libc, parent)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
