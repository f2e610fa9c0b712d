"""Runs inside the sandbox: isolate, drop privileges, then test candidate code.

Started by ``sandbox.py`` as ``python -I sandbox_child.py`` with a JSON request
on stdin. Uses the standard library only. Prints one result line tagged with
the request's nonce on stdout.
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
MS_REC, MS_PRIVATE, MNT_DETACH = 0x4000, 0x40000, 0x2
PR_SET_PDEATHSIG = 1
NOBODY = 65534
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def _isolate(libc):
    """New network, mount and pid namespaces; fresh tmpfs over every shared scratch dir."""
    if libc.unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID) != 0:
        return False
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    for path in WORLD_WRITABLE:
        if os.path.isdir(path):
            libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64m,mode=1777")
    _expose_stdlib(libc)
    return True


def _expose_stdlib(libc):
    """Let the unprivileged user import the standard library when it lives under a private dir.

    The first ancestor of the interpreter's prefix that others cannot enter
    (e.g. /root) is covered by an empty tmpfs, and the prefix alone is bound
    back into it, read-only. Everything else in that private dir stays hidden.
    """
    prefix = sys.base_prefix
    parts = prefix.strip("/").split("/")
    ancestors = ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]
    blocked = next((path for path in ancestors if not os.stat(path).st_mode & 0o001), None)
    if blocked is None:
        return
    staging = "/tmp/.stdlib"
    os.makedirs(staging)
    libc.mount(prefix.encode(), staging.encode(), None, MS_BIND | MS_REC, None)
    libc.mount(b"tmpfs", blocked.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    os.makedirs(prefix)
    libc.mount(staging.encode(), prefix.encode(), None, MS_BIND | MS_REC, None)
    libc.mount(None, prefix.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
    libc.umount2(staging.encode(), MNT_DETACH)
    os.rmdir(staging)


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


def _drop_privileges(workdir):
    os.makedirs(workdir, exist_ok=True)
    if os.getuid() == 0:
        os.chown(workdir, NOBODY, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir


def _run_cases(request):
    namespace = {"__name__": "candidate"}
    try:
        exec(compile(request["code"], "<candidate>", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - any failure of candidate code is a result
        return {"ok": False, "passed": [], "failures": [f"Failed to execute code: {type(exc).__name__}: {exc}"]}
    function = namespace.get(request["function"])
    if not callable(function):
        return {"ok": False, "passed": [], "failures": [f"Function {request['function']} is not defined"]}
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
    return {"ok": not failures, "passed": passed, "failures": failures}


def _grandchild(request, libc, isolated):
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # As pid 1 of its namespace this process ignores default-action signals, so exit explicitly.
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(128 + signal.SIGXCPU))
    workdir = "/tmp/sandbox" if isolated else request["workdir"]
    _drop_privileges(workdir)
    _limit(request)
    try:
        result = _run_cases(request)
    except BaseException:  # noqa: BLE001
        result = {"ok": False, "passed": [], "failures": [traceback.format_exc(limit=3)]}
    result["isolated"] = isolated
    sys.stdout.write(f"\n{request['nonce']}{json.dumps(result, default=repr)}\n")
    sys.stdout.flush()
    os._exit(0)


def main():
    request = json.loads(sys.stdin.read())
    libc = ctypes.CDLL(None, use_errno=True)
    isolated = os.getuid() == 0 and _isolate(libc)
    pid = os.fork()
    if pid == 0:
        _grandchild(request, libc, isolated)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
