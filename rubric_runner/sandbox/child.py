"""Runs inside the sandbox: isolate (namespaces backend), drop privileges, then test candidate code.

Started by ``run.py`` as ``python -I -S child.py`` (under bubblewrap, or
directly) with a JSON request as the first line on stdin. Uses the standard
library only (and pytest, from the request's ``import_paths``, in pytest mode).
Prints one result line tagged with the request's nonce on stdout.

In session mode (``session.py``) each further line on stdin is a shell command,
run under ``/bin/sh -c`` on a copy of the host dir whose descriptor the request
names (``workspace_fd``): copied into the private work dir before, and the work
dir mirrored back once the command has ended; what it left running is killed,
and its result line (exit code, the end of its output) tagged with the
command's nonce. Only this process holds the descriptor; the command never
does. The command's
``PATH`` starts with a dir beside the work dir where ``python`` and ``python3``
are this interpreter, so ``python -m pytest`` works where the system has no
``python``; pytest loads no plugin it is not named (``-p NAME``), as in
pytest mode: the site-packages it comes from are the runner's, not the task's.
"""

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import stat
import sys
import time
import traceback

CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x20, 0x1000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
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


def _sandbox_user(request):
    """Root's sandbox's own user (the request's ``user``), or None when the code keeps this process's user."""
    return request["user"] if request["isolation"] != "none" and os.getuid() == 0 else None


def _drop_privileges(workdir, user):
    os.makedirs(workdir, exist_ok=True)
    if user is not None:
        os.chown(workdir, user, user)
        os.setgroups([])
        os.setgid(user)
        os.setuid(user)
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


def _die_with_parent(libc, parent):
    """Be killed when ``parent`` dies (set after any change of user, which clears the setting)."""
    if sys.platform == "linux":
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (parent, 0):  # it died before the setting took effect (0: parent outside our pid namespace)
        os._exit(128 + signal.SIGKILL)


def _kind(mode):
    return "l" if stat.S_ISLNK(mode) else "d" if stat.S_ISDIR(mode) else "f" if stat.S_ISREG(mode) else None


def _entries(dir_fd):
    """Every dir, regular file and symlink under ``dir_fd``: relative path -> (kind, permission bits)."""
    found = {}
    for top, dirs, files, top_fd in os.fwalk(".", dir_fd=dir_fd):
        for name in dirs + files:
            mode = os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_mode
            if _kind(mode):
                found[os.path.normpath(os.path.join(top, name))] = (_kind(mode), stat.S_IMODE(mode))
    return found


def _read(path, dir_fd):
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    with os.fdopen(handle, "rb") as opened:
        return opened.read()


def _write(path, data, mode, dir_fd):
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode | 0o600, dir_fd=dir_fd)
    with os.fdopen(handle, "wb") as opened:
        opened.write(data)


def _mirror(source_fd, target_fd, owner=None):
    """Make the tree under ``target_fd`` the one under ``source_fd``: what differs rewritten, what is gone
    removed, no symlink followed (each entry's parents are dirs on both sides once the mismatches are gone);
    then, given an ``owner``, every entry handed to it."""
    source, target = _entries(source_fd), _entries(target_fd)
    for path in sorted(target, reverse=True):  # children before their dirs
        if source.get(path, (None,))[0] != target[path][0]:
            (os.rmdir if target[path][0] == "d" else os.unlink)(path, dir_fd=target_fd)
            del target[path]
    for path, (kind, mode) in sorted(source.items()):  # dirs before their children
        if kind == "d":
            if path not in target:
                os.mkdir(path, 0o700, dir_fd=target_fd)
            os.chmod(path, mode | 0o700, dir_fd=target_fd)
        elif kind == "l":
            link = os.readlink(path, dir_fd=source_fd)
            if path in target and os.readlink(path, dir_fd=target_fd) != link:
                os.unlink(path, dir_fd=target_fd)
                del target[path]
            if path not in target:
                os.symlink(link, path, dir_fd=target_fd)
        else:
            data = _read(path, source_fd)
            if path not in target or _read(path, target_fd) != data:
                _write(path, data, mode, target_fd)
    for path in sorted(source, reverse=True) if owner is not None else ():
        os.chown(path, owner, owner, dir_fd=target_fd, follow_symlinks=False)


def _reclaim(path):
    """Root, whose capabilities bubblewrap cut to a few: take back what the command's user made unreadable."""
    os.lchown(path, 0, 0)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o700)
        for name in os.listdir(path):
            _reclaim(os.path.join(path, name))


def _shell(request, libc, parent, output):
    """The command, as the sandbox's user, with its limits, in the work dir (the workspace's copy); its output
    to the file ``output`` (a descriptor), nothing else of this process inherited."""
    os.dup2(output, 1)
    os.dup2(output, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # the workspace's descriptor, the session's pipes
    os.setpgid(0, 0)  # a group of its own, ended as one when nothing isolates it
    _drop_privileges(request["workdir"], _sandbox_user(request))
    _die_with_parent(libc, parent)
    _limit(request)
    os.environ.update(PATH=f"{request['shims']}:{request['path']}", PYTHONPATH=os.pathsep.join(request.get("import_paths", [])),
                      PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",  # the runner's own pytest plugins are not the task's
                      PYTHONDONTWRITEBYTECODE="1")  # no __pycache__ of the command's own mirrored into the task's files
    os.execv("/bin/sh", ["/bin/sh", "-c", request["command"]])


def _python_shims(workdir):
    """A dir beside the work dir (so never mirrored back) holding ``python`` and ``python3`` links to this
    interpreter."""
    shims = os.path.join(os.path.dirname(workdir), "python-bin")
    os.makedirs(shims, exist_ok=True)
    for name in ("python", "python3"):
        if not os.path.lexists(os.path.join(shims, name)):
            os.symlink(sys.executable, os.path.join(shims, name))
    return shims


def _wait(pid, seconds):
    """``pid``'s wait status once it ends, or None when it is still running after ``seconds``."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here: poll
        handle = None
    deadline = time.monotonic() + seconds
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            left = deadline - time.monotonic()
            if done or left <= 0:
                return status if done else None
            if handle is not None:
                select.select([handle], [], [], left)
            else:
                time.sleep(min(left, 0.005))
    finally:
        if handle is not None:
            os.close(handle)


def _end_the_rest(pid, isolated):
    """Kill whatever the command left running (all of it, when it ran out of time) and reap it: in the
    sandbox's pid namespace every process but this one (pid 1 there, or bubblewrap's child), else the
    command's process group (this process is their subreaper, so they are its own to reap)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL) if isolated else os.killpg(pid, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1 if isolated else -pid, 0)
        except ChildProcessError:
            return


def _output_end(path, chars):
    """The last ``chars`` characters of the command's output, its size in bytes, and whether more came before."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 4 * chars))
        data = handle.read()
    text = data.decode("utf-8", "replace")
    return {"output": text[-chars:], "output_bytes": size, "cut": len(data) < size or len(text) > chars}


def _run_one(session, command, libc, work_fd):
    """Copy the workspace in, run the command, mirror the work dir back: the command's result."""
    request, user = {**session, **command}, _sandbox_user(session)
    try:
        _mirror(session["workspace_fd"], work_fd, user)
    except OSError as exc:
        return {"error": f"the workspace could not be copied in: {exc}", "output": "", "output_bytes": 0}
    output_path = os.path.join(os.path.dirname(session["workdir"]), "output")
    output = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _shell(request, libc, parent, output)
    os.close(output)
    status = _wait(pid, float(command["wall_seconds"]))
    _end_the_rest(pid, session["isolation"] != "none")
    if status is None:  # the workspace stays as it was
        result = {"timed_out": True, "output": "", "output_bytes": 0}
    else:
        code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
        result = {"exit_code": code, **_output_end(output_path, int(command["output_chars"]))}
    try:
        if user is not None:  # what the command's user made, taken back for the copy back and the next copy in
            _reclaim(session["workdir"])
        if status is not None:
            _mirror(work_fd, session["workspace_fd"])
    except OSError as exc:
        result["error"] = f"the workspace could not be copied back: {exc}"
    return result


def _serve(session, libc):
    """Session mode: each line on stdin is a command (its nonce, text, wall clock and output size), run on a
    fresh copy of the workspace, one at a time; each answered by one result line; until stdin closes."""
    libc.prctl(PR_SET_DUMPABLE, 0)  # the commands, maybe of this user, cannot reach this process's pipes
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)  # what a command leaves behind is reparented here, to be reaped
    os.makedirs(session["workdir"], exist_ok=True)
    work_fd = os.open(session["workdir"], os.O_RDONLY | os.O_DIRECTORY)
    session["shims"] = _python_shims(session["workdir"])
    for line in sys.stdin:
        command = json.loads(line)
        _write_result(command, _run_one(session, command, libc, work_fd))


def _session(session, libc):
    """Serve the session; under the namespace backend from pid 1 of the new pid namespace, so that ending
    a command's leftovers reaches them all and nothing else."""
    if session["isolation"] != "namespaces":
        _serve(session, libc)
        return
    pid = os.fork()
    if pid == 0:
        _die_with_parent(libc, 0)
        _serve(session, libc)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


def _write_result(request, result):
    sys.stdout.write(f"\n{request['nonce']}{json.dumps(result, default=repr)}\n")
    sys.stdout.flush()


def _grandchild(request, libc, parent):
    # As pid 1 of its namespace this process ignores default-action signals, so exit explicitly.
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(128 + signal.SIGXCPU))
    _drop_privileges(request["workdir"], _sandbox_user(request))
    _die_with_parent(libc, parent)
    _limit(request)
    try:
        result = _run_pytest(request) if request["mode"] == "pytest" else _run_cases(request)
    except BaseException:  # noqa: BLE001
        result = _report([], [traceback.format_exc(limit=3)])
    _write_result(request, result)
    os._exit(0)


def main():
    request = json.loads(sys.stdin.readline())
    libc = ctypes.CDLL(None, use_errno=True)
    _die_with_parent(libc, request["parent_pid"])
    if request["isolation"] == "namespaces" and not _isolate(libc, request.get("import_paths", [])):
        problem = os.strerror(ctypes.get_errno())
        _write_result(request, {"refused": f"the namespace backend could not create namespaces ({problem})"})
        return
    if request["mode"] == "session":
        _session(request, libc)
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
