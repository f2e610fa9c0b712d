"""Sandbox isolation: the hostile-code matrix here (root in CI) and as an unprivileged user, refusal, none.

The matrix (tests/support/hostile.py) runs under ``auto`` and ``namespaces`` in this process, and under ``auto``
as an ordinary user: an account created for the tests (when pytest runs as root) running Debian's
python3 through ``setpriv`` on a copy of the sandbox package it can read. Every case must leave the
starting process unreached (no connection, datagram, signal, file in the home dir, read secret or
key) and end in bounded time with nothing left running. The offline demo, and a multi-task run whose
report a child process refreshes, run as that user too.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import hostile
from support.helpers import (
    ROOT,
    SCRIPTED_EVIDENCE,
    copy_pytest,
    only_task,
    read_events,
    run_cli,
    run_in_process,
    run_json,
    verdict,
    write_script,
)

from rubric_runner.plugins.registry import bind_settings
from rubric_runner.sandbox import (
    Limits,
    bwrap,
    choose,
    isolation_setting,
    pytest_path,
    run_cases,
    unavailable,
)
from rubric_runner.sandbox.isolation import INSTALL_FIX, NAMESPACES_FIX, UNISOLATED
from rubric_runner.tools.builtin import run_test_suite

BOUND_SECONDS = 6.0  # the wall limit (3 s), plus the interpreter's start and teardown, with room to spare
USER = "rubric-sandbox-test"
DEBIAN_PYTHON = "/usr/bin/python3"
MATRIX = [name for name in hostile.CASES if name != "writes_marker"]
PYTEST_CASES = ["reads_home_secret", "writes_home", "connects_loopback", "reads_parent_environ", "daemon_outlives_it"]
"""Cases run again with a pytest file as the suite: its interpreter sees pytest's site-packages too."""
CASE_IDS = [("cases", name) for name in MATRIX] + [("pytest", name) for name in PYTEST_CASES]
NO_BWRAP = "/nonexistent"
"""A PATH without bubblewrap (interpreters are started by absolute path)."""
MARKER_CODE = "def find_duplicates(lst):\n    open({path!r}, 'w').write('ran')\n    return []\n"
"""Worker code that leaves a mark when it runs."""
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="the namespace backend needs root")


def outcome(result: dict):
    """What the case's ``f()`` returned, read back from the failure message (None if it never returned)."""
    match = re.search(r"(?:got|AssertionError:) (.*)$", result["failures"][0]) if result["failures"] else None
    try:
        return ast.literal_eval(match.group(1)) if match else None
    except (ValueError, SyntaxError):
        return None


ERRORS = ("FileNotFoundError", "PermissionError")
SPECIFIC = {
    "reads_home_secret": lambda result, got, seen: got in ERRORS,
    "writes_home": lambda result, got, seen: got in ERRORS,
    "connects_loopback": lambda result, got, seen: got.split(":")[0] in ("ConnectionRefusedError", "OSError"),
    "resolves_dns": lambda result, got, seen: got[0] == "gaierror",
    "reads_parent_environ": lambda result, got, seen: got[0] in ERRORS and not any("API_KEY" in key for key in got[1]),
    "signals_parent": lambda result, got, seen: "sent" not in got,
    "kills_everyone": lambda result, got, seen: True,  # what counts: the bystander is alive (checked for every case)
    "fork_bomb": lambda result, got, seen: result["killed"] is not None,
    "memory_hog": lambda result, got, seen: "MemoryError" in result["failures"][0] and seen["peak_growth_kib"] < 50 * 1024,
    "cpu_loop": lambda result, got, seen: result["killed"] == "CPU time limit exceeded",
    "floods_output": lambda result, got, seen: result["killed"] == "output limit of 8 MiB exceeded"
    and len(result["output_tail"]) <= 2000,
    "sleeps_past_wall_clock": lambda result, got, seen: result["killed"] == "wall-clock limit of 3s exceeded"
    and result["timed_out"] and seen["seconds"] >= 3,
    "leaves_its_session": lambda result, got, seen: result["killed"] == "wall-clock limit of 3s exceeded"
    and seen["seen_marker"],
    "daemon_outlives_it": lambda result, got, seen: result["ok"] and seen["seen_marker"],
}


def check(name: str, seen: dict, backend: str) -> None:
    """Case ``name`` was contained: ``seen`` is what ``hostile.Watch.run`` recorded around it."""
    result = seen["result"]
    assert (result["isolation"], result["isolated"]) == (backend, True), result
    assert seen["seconds"] < BOUND_SECONDS, seen
    assert seen["left_behind"] == [], f"still running after 3 s: {seen['left_behind']}"
    assert (seen["connections"], seen["datagrams"], seen["signals"]) == (0, 0, 0), seen
    assert not seen["home_written"] and seen["secret_intact"] and seen["bystander_alive"], seen
    assert hostile.SECRET_TEXT not in json.dumps(result) and hostile.FAKE_KEY not in json.dumps(result)
    try:
        held = SPECIFIC[name](result, outcome(result), seen)
    except (TypeError, IndexError, AttributeError):  # f() never returned what the check reads
        held = False
    assert held, result


def auto_backend() -> str:
    """The backend ``auto`` uses here: bubblewrap wherever it works (checked in its own test)."""
    return choose("auto").backend


# --- in this process ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix_here(tmp_path_factory):
    """The matrix in this process, once per (isolation, suite kind), run on first use."""
    scratch = str(tmp_path_factory.mktemp("hostile"))
    done: dict = {}

    def outcomes(isolation: str, suite: str) -> dict:
        if (isolation, suite) not in done:
            names = MATRIX if suite == "cases" else PYTEST_CASES
            with pytest.MonkeyPatch.context() as env:
                env.setenv("OPENAI_API_KEY", hostile.FAKE_KEY)
                done[isolation, suite] = hostile.run_matrix(names, suite, isolation, str(Path.home()), scratch)
        return done[isolation, suite]

    return outcomes


@pytest.mark.skipif(choose("auto").backend is None, reason="nothing isolates here (rubric-runner doctor says why)")
@pytest.mark.parametrize(("suite", "name"), CASE_IDS)
def test_hostile_code_is_contained_under_auto(matrix_here, suite, name):
    run = matrix_here("auto", suite)
    check(name, run["outcomes"][name], auto_backend())
    assert run["notices"] == []


@ROOT_ONLY
@pytest.mark.parametrize(("suite", "name"), CASE_IDS)
def test_hostile_code_is_contained_under_namespaces(matrix_here, suite, name):
    run = matrix_here("namespaces", suite)
    check(name, run["outcomes"][name], "namespaces")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_auto_uses_bubblewrap_when_it_works_for_root_too():
    assert unavailable("bwrap") is None
    assert auto_backend() == "bwrap"


def _kill_the_parent_midway(command: list[str], env: dict[str, str], marker: str) -> list[int]:
    """Start ``command`` (it sandboxes code that starts a marked process and sleeps), SIGKILL it once the
    marked process runs; the sandbox processes still there 5 s later."""
    started = (marker + hostile.STARTED).encode()
    with hostile.adopting():
        parent = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while not hostile.processes_with(started):
                assert parent.poll() is None and time.monotonic() < deadline, parent.communicate()[0]
                time.sleep(0.05)
        finally:
            parent.kill()
            parent.wait()
        return hostile.left_behind(5.0, started)


@pytest.mark.parametrize("isolation", ["auto", pytest.param("namespaces", marks=ROOT_ONLY)])
def test_the_sandbox_dies_with_the_process_that_started_it(isolation):
    marker = f"rubric-parent-dies-{os.getpid()}-{isolation}"
    settings = json.dumps({"until_killed": True, "isolation": isolation, "marker": marker})
    command = [sys.executable, str(Path(hostile.__file__)), str(ROOT), settings]
    assert _kill_the_parent_midway(command, dict(os.environ), marker) == []


# --- as an unprivileged user -------------------------------------------------------------------------


@dataclass(frozen=True)
class OrdinaryUser:
    """An unprivileged account and what it runs: Debian's python3 on a tree of files it can read."""

    uid: int
    gid: int
    home: Path
    tree: Path

    def run(self, settings: dict, path: str = "/usr/bin:/bin", timeout: float = 300) -> dict:
        """``hostile.py`` as this user, with ``settings``; its JSON answer."""
        completed = subprocess.run(self.hostile(settings), env=self.env(path), capture_output=True, text=True, timeout=timeout)
        assert completed.returncode == 0, completed.stderr
        return json.loads(completed.stdout)

    def hostile(self, settings: dict) -> list[str]:
        """The command line that runs ``hostile.py`` with ``settings`` as this user."""
        return self.command("-I", str(self.tree / "hostile.py"), str(self.tree / "lib"), json.dumps(settings))

    def command(self, *args: str) -> list[str]:
        """Debian's python3 with ``args``, as this user."""
        return [shutil.which("setpriv"), f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", DEBIAN_PYTHON, *args]

    def env(self, path: str) -> dict[str, str]:
        """A login-like environment for this user."""
        return {"PATH": path, "HOME": str(self.home), "LANG": "C.UTF-8"}


@pytest.fixture(scope="session")
def ordinary_user():
    """The test account (created with useradd when missing), or a skip saying why there is none."""
    if os.getuid() != 0:
        pytest.skip("pytest runs as an ordinary user: the in-process tests are the unprivileged run")
    if not os.access(DEBIAN_PYTHON, os.X_OK) or shutil.which("setpriv") is None:
        pytest.skip(f"needs {DEBIAN_PYTHON} and setpriv to run code as another user")
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", USER], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot create the user {USER}: {made.stderr.strip()}")
        entry = pwd.getpwnam(USER)
    home = Path(entry.pw_dir)
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    tree = Path(tempfile.mkdtemp(prefix="rubric-user-"))
    try:
        tree.chmod(0o755)
        package = tree / "lib" / "rubric_runner"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        shutil.copytree(ROOT / "rubric_runner" / "sandbox", package / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
        copy_pytest(tree / "lib")
        shutil.copy2(hostile.__file__, tree / "hostile.py")
        (tree / "scratch").mkdir()
        os.chown(tree / "scratch", entry.pw_uid, entry.pw_gid)
        yield OrdinaryUser(entry.pw_uid, entry.pw_gid, home, tree)
    finally:
        shutil.rmtree(tree)


@pytest.fixture(scope="module")
def matrix_as_user(ordinary_user):
    """The matrix as the ordinary user under ``auto`` with bubblewrap on PATH, once per suite kind."""
    done: dict = {}

    def outcomes(suite: str) -> dict:
        if suite not in done:
            names = MATRIX if suite == "cases" else PYTEST_CASES
            settings = {"names": names, "suite": suite, "isolation": "auto",
                        "home": str(ordinary_user.home), "scratch": str(ordinary_user.tree / "scratch")}
            done[suite] = ordinary_user.run(settings)
        return done[suite]

    return outcomes


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
@pytest.mark.parametrize(("suite", "name"), CASE_IDS)
def test_hostile_code_is_contained_for_an_ordinary_user(matrix_as_user, suite, name):
    run = matrix_as_user(suite)
    check(name, run["outcomes"][name], "bwrap")
    assert run["notices"] == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_the_sandbox_dies_with_an_ordinary_users_process_that_started_it(ordinary_user):
    marker = f"rubric-parent-dies-{os.getpid()}-user"
    settings = {"until_killed": True, "isolation": "auto", "marker": marker}
    assert _kill_the_parent_midway(ordinary_user.hostile(settings), ordinary_user.env("/usr/bin:/bin"), marker) == []


def _marker_run(user: OrdinaryUser, isolation: str, path: str) -> tuple[dict, list]:
    """Code that writes a marker file in a dir the user owns, run by the user: (what happened, notices)."""
    settings = {"names": ["writes_marker"], "suite": "cases", "isolation": isolation,
                "home": str(user.home), "scratch": str(user.tree / "scratch")}
    answer = user.run(settings, path=path)
    return answer["outcomes"]["writes_marker"], answer["notices"]


def test_without_bubblewrap_an_ordinary_user_is_refused_and_the_code_never_runs(ordinary_user):
    control, control_notices = _marker_run(ordinary_user, "none", NO_BWRAP)
    assert control["marker_file_written"] is True  # the code writes the marker whenever it runs
    assert (control["result"]["isolation"], control["result"]["isolated"]) == ("none", False)
    assert control_notices == [["sandbox_unisolated", UNISOLATED]]

    refused, notices = _marker_run(ordinary_user, "auto", NO_BWRAP)
    result = refused["result"]
    assert refused["marker_file_written"] is False
    assert result["refused"] == (
        "no isolation is available: bubblewrap is not installed (no bwrap on PATH), "
        f"and the namespace backend needs root. Fix: {INSTALL_FIX}"
    )
    assert "apt install bubblewrap" in result["refused"] and "sandbox.isolation=none" in result["refused"]
    assert result["failures"] == [f"sandbox: refused to run the code: {result['refused']}"]
    assert (result["ok"], result["isolation"], result["isolated"], result["exit_code"]) == (False, None, False, None)
    assert notices == [["sandbox_refused", f"the sandbox refused to run generated code: {result['refused']}"]]


def test_an_ordinary_user_cannot_pick_the_namespace_backend(ordinary_user):
    refused, notices = _marker_run(ordinary_user, "namespaces", "/usr/bin:/bin")
    assert refused["marker_file_written"] is False
    assert refused["result"]["refused"].startswith("sandbox.isolation=namespaces: the namespace backend needs root. Fix:")
    assert [event for event, _ in notices] == ["sandbox_refused"]


def test_the_namespace_child_refuses_when_it_cannot_make_namespaces(ordinary_user):
    """Where unshare fails (here: not root), the namespace backend's child reports a refusal and runs nothing."""
    marker = ordinary_user.tree / "scratch" / "namespace-child-ran"
    request = {
        "mode": "cases", "code": MARKER_CODE.format(path=str(marker)), "function": "find_duplicates",
        "cases": [{"name": "t", "args": [[]], "expected": []}], "nonce": "NONCE", "isolation": "namespaces",
        "workdir": str(ordinary_user.tree / "scratch"), "parent_pid": os.getpid(), **vars(Limits()),
    }
    child = ordinary_user.tree / "lib" / "rubric_runner" / "sandbox" / "child.py"
    ran = subprocess.run(ordinary_user.command("-I", "-S", str(child)), input=json.dumps(request), env={},
                         capture_output=True, text=True, timeout=30)
    assert json.loads(ran.stdout.strip().removeprefix("NONCE")) == {
        "refused": "the namespace backend could not create namespaces (Operation not permitted)"
    }
    assert not marker.exists()


# --- the setting, through the loop ---------------------------------------------------------------------


def _grades_twice(tmp_path: Path, code: str) -> Path:
    """A script whose grader runs the worker's code twice, then judges."""
    call = {"tool_calls": [{"name": "run_test_suite", "args": {"code": code}}]}
    return write_script(tmp_path / "s.yaml", worker=[{"content": code}],
                        grader=[call, call, verdict("needs_revision", ("All tests pass in run_test_suite", False))])


def _loop(tmp_path: Path, script: Path, isolation: str):
    return run_in_process(tmp_path, "worker=scripted", "grader=scripted", f"worker.script={script}",
                          f"grader.script={script}", "rubric=code", "grader.max_iterations=1",
                          f"sandbox.isolation={isolation}", "run.console=true")


def test_a_refusal_reaches_the_grader_the_record_and_the_console_once(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "ran.txt"
    monkeypatch.setenv("PATH", NO_BWRAP)  # bwrap asked for by name, and missing
    result, run_dir = _loop(tmp_path, _grades_twice(tmp_path, MARKER_CODE.format(path=str(marker))), "bwrap")
    assert not marker.exists()
    assert result.status == "max_iterations_reached"
    events = read_events(run_dir)
    outputs = [e["output"] for e in events if e["event"] == "tool_call_end" and e["tool"] == "run_test_suite"]
    assert len(outputs) == 2 and all("sandbox: refused to run the code: sandbox.isolation=bwrap: bubblewrap is not installed" in o for o in outputs)
    refusals = [e for e in events if e["event"] == "sandbox_refused"]
    # two grader calls, then the hidden check of the answer (first and final are one answer here)
    assert len(refusals) == 3 and "apt install bubblewrap" in refusals[0]["message"]
    final = only_task(result).verification.final
    assert final.outcome == "unverifiable" and final.checks[0].error.startswith("the sandbox refused to run the code: ")
    warnings = [line for line in capsys.readouterr().err.splitlines() if "refused" in line]
    assert warnings == [f"warning: {refusals[0]['message']}"]


def test_isolation_none_runs_the_code_and_warns_once(tmp_path, capsys):
    marker = tmp_path / "ran.txt"
    result, run_dir = _loop(tmp_path, _grades_twice(tmp_path, MARKER_CODE.format(path=str(marker))), "none")
    assert marker.read_text() == "ran"
    events = read_events(run_dir)
    outputs = [e["output"] for e in events if e["event"] == "tool_call_end" and e["tool"] == "run_test_suite"]
    assert len(outputs) == 2 and all('"isolation": "none", "isolated": false' in o for o in outputs)
    # two grader calls and the hidden check of the answer
    assert [e["message"] for e in events if e["event"] == "sandbox_unisolated"] == [UNISOLATED] * 3
    assert [line for line in capsys.readouterr().err.splitlines() if "unisolated" in line] == [f"warning: {UNISOLATED}"]


def test_each_run_keeps_its_own_setting_when_runs_share_a_process(tmp_path):
    """Two threads, each inside its own setting at the same time, see only their own."""
    tool = bind_settings(run_test_suite, {"function": "f", "cases": [{"name": "t", "expected": 1}]}, "grader.tools.run_test_suite")
    both_inside = threading.Barrier(2)
    seen: dict = {}

    def one(isolation: str) -> None:
        with isolation_setting(isolation):
            both_inside.wait()
            seen[isolation] = tool.invoke({"code": "def f():\n    return 1\n"})["isolation"]
            both_inside.wait()

    threads = [threading.Thread(target=one, args=(mode,)) for mode in ("none", "auto")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"none": "none", "auto": auto_backend()}


def test_a_bubblewrap_that_cannot_make_namespaces_is_not_told_to_install_bubblewrap(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    refusal = choose("bwrap").refusal
    assert refusal == ("sandbox.isolation=bwrap: bubblewrap (" + str(fake) + ") does not work here: bwrap: setting up uid "
                       f"map: Permission denied. Fix: {NAMESPACES_FIX}")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert choose("bwrap").refusal.endswith(f"Fix: {INSTALL_FIX}")


def test_outside_any_run_the_sandbox_uses_auto():
    result = run_cases("def f():\n    return 1\n", "f", [{"name": "t", "expected": 1}], Limits())
    assert result["ok"] and result["isolation"] == auto_backend() and result["isolated"]


def test_the_doctor_says_what_works_here(tmp_path):
    found = run_cli("doctor", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    states = {line.split()[0]: line.split()[1] for line in found.stdout.splitlines() if line.startswith("  ")}
    assert states == {"bwrap": "works:" if auto_backend() == "bwrap" else "unavailable:", "none": "works:",
                      "namespaces": "works:" if os.getuid() == 0 else "unavailable:"}
    assert found.stdout.splitlines()[-1] == f"auto: {auto_backend()}"

    missing = run_cli("doctor", cwd=tmp_path, env={"PATH": NO_BWRAP})
    assert "  bwrap       unavailable: bubblewrap is not installed (no bwrap on PATH)  (bubblewrap, any user)" in missing.stdout
    if os.getuid() == 0:
        assert (missing.returncode, missing.stdout.splitlines()[-1]) == (0, "auto: namespaces")
    else:
        assert missing.returncode == 1 and "auto: refuses to run code: " in missing.stdout and INSTALL_FIX in missing.stdout


# --- the offline demo, as an ordinary user -------------------------------------------------------------


VIEW = "$1 --bind \"$2\" \"$4/site\" && $1 --bind \"$3\" \"$4/checkout\" && shift 4 && exec \"$@\""
"""Bind this venv's site-packages and the checkout where the ordinary user can reach them, then run the rest."""


@pytest.fixture(scope="module")
def installed_for_user(ordinary_user):
    """A command prefix that shows the ordinary user rubric_runner and its dependencies, as if installed in a
    dir it can read: this checkout and this venv's site-packages (Debian's python3 is the same 3.11), bound
    read-only in a private mount namespace for that command only."""
    view = ordinary_user.tree / "view"
    for name in ("site", "checkout"):
        (view / name).mkdir(parents=True)
    view.chmod(0o755)
    prefix = [shutil.which("unshare"), "--mount", "--propagation", "private", "/bin/sh", "-c", VIEW, "sh",
              shutil.which("mount"), pytest_path(), str(ROOT), str(view)]
    tried = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if tried.returncode != 0:
        pytest.skip(f"cannot show the ordinary user this installation (unshare --mount): {tried.stderr.strip()}")
    return prefix, f"{view / 'checkout'}:{view / 'site'}"


def _cli_for_user(user: OrdinaryUser, installed, *args: str, path: str = "/usr/bin:/bin") -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``python3 -m rubric_runner ARGS`` as the ordinary user."""
    prefix, pythonpath = installed
    env = {**user.env(path), "PYTHONPATH": pythonpath, "RUBRIC_RUNNER_PLUGINS": ""}
    return [*prefix, *user.command("-m", "rubric_runner", *args)], env


def _cli_as_user(user: OrdinaryUser, installed, *args: str, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess:
    """``python3 -m rubric_runner ARGS`` as the ordinary user, in its scratch dir."""
    command, env = _cli_for_user(user, installed, *args, path=path)
    return subprocess.run(command, env=env, cwd=user.tree / "scratch", capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_the_offline_demo_is_satisfied_for_an_ordinary_user_with_bubblewrap(ordinary_user, installed_for_user):
    run_dir = ordinary_user.tree / "scratch" / "demo"
    demo = _cli_as_user(ordinary_user, installed_for_user, "worker=scripted", "grader=scripted", "rubric=code", f"hydra.run.dir={run_dir}")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert run_json(run_dir)["status"] == "satisfied"
    outputs = [json.loads(e["output"]) for e in read_events(run_dir) if e["event"] == "tool_call_end"]
    assert [(o["isolation"], o["ok"]) for o in outputs] == [("bwrap", False), ("bwrap", True)]
    doctor = _cli_as_user(ordinary_user, installed_for_user, "doctor")
    assert doctor.returncode == 0 and doctor.stdout.splitlines()[-1] == "auto: bwrap", doctor.stdout + doctor.stderr
    assert "  namespaces  unavailable: the namespace backend needs root" in doctor.stdout


def test_the_offline_demo_is_refused_for_an_ordinary_user_without_bubblewrap(ordinary_user, installed_for_user):
    run_dir = ordinary_user.tree / "scratch" / "refused"
    demo = _cli_as_user(ordinary_user, installed_for_user, "worker=scripted", "grader=scripted", "rubric=code",
                        f"hydra.run.dir={run_dir}", path=NO_BWRAP)
    warnings = [line for line in demo.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: the sandbox refused to run generated code: no isolation is available: bubblewrap is "
                        f"not installed (no bwrap on PATH), and the namespace backend needs root. Fix: {INSTALL_FIX}"]
    events = read_events(run_dir)
    # three grader calls (the satisfied verdict rests on tests the sandbox refused: it is sent back once), and the
    # hidden checks of the first and the final answer
    assert [e["event"] for e in events if e["event"].startswith("sandbox_")] == ["sandbox_refused"] * 5
    record = run_json(run_dir)
    assert record["status"] == "unsupported" and demo.returncode == 1
    assert {record["task"]["verification"][answer]["outcome"] for answer in ("first", "final")} == {"unverifiable"}
    outputs = [e["output"] for e in events if e["event"] == "tool_call_end"]
    refusal = '{"ok": false, "passed": [], "failures": ["sandbox: refused to run the code: no isolation is available'
    assert len(outputs) == 3 and all(output.startswith(refusal) for output in outputs)
    doctor = _cli_as_user(ordinary_user, installed_for_user, "doctor", path=NO_BWRAP)
    assert doctor.returncode == 1 and INSTALL_FIX in doctor.stdout.splitlines()[-1], doctor.stdout + doctor.stderr


def test_an_ordinary_users_run_refreshes_its_report_in_a_child_process(ordinary_user, installed_for_user):
    scratch = ordinary_user.tree / "scratch"
    ok = verdict("satisfied", ("c", True))
    script = write_script(scratch / "slow.yaml", [{"content": "answer", "latency": 1.5}], [ok])
    data = scratch / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{i}", "task": f"do {i}"}) + "\n" for i in range(6)))
    run_dir = scratch / "tasks"
    command, env = _cli_for_user(ordinary_user, installed_for_user, "worker=scripted", "grader=scripted", "run.console=false",
                                 "~grader.tools.count_syllables", "~rubric.verify.count_syllables", SCRIPTED_EVIDENCE,  # no plugins here
                                 f"worker.script={script}", f"grader.script={script}", f"rubric.dataset={data}",
                                 "run.concurrency=1", f"hydra.run.dir={run_dir}")
    proc = subprocess.Popen(command, env=env, cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    deadline = time.monotonic() + 120
    while proc.poll() is None and "In progress" not in seen and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = (run_dir / "report.md").read_text() if (run_dir / "report.md").exists() else ""
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "warning" not in stderr, stdout + stderr
    assert "**In progress: " in seen and " of 6 runs done.**" in seen
    assert (run_dir / "report.md").stat().st_uid == ordinary_user.uid
    assert "6 runs in 1 job: 6 satisfied" in (run_dir / "report.md").read_text()


def test_an_ordinary_users_report_on_someone_elses_sweep_is_one_line(ordinary_user, installed_for_user):
    sweep_dir = ordinary_user.tree / "roots_sweep"
    made = run_cli("-m", "worker=scripted", "grader=scripted", "rubric=haiku", "run.console=false",
                   "grader.max_iterations=2,3", f"hydra.sweep.dir={sweep_dir}", cwd=ordinary_user.tree)
    assert made.returncode == 0, made.stderr
    before = sorted(p.name for p in sweep_dir.iterdir())
    report = _cli_as_user(ordinary_user, installed_for_user, "report", str(sweep_dir))
    assert report.returncode == 2 and len(report.stderr.splitlines()) == 1, report.stdout + report.stderr
    assert report.stderr.startswith(f"error: report: cannot use {sweep_dir}/summary.jsonl: Permission denied (")
    assert sorted(p.name for p in sweep_dir.iterdir()) == before


def test_the_config_offers_exactly_the_sandbox_modes():
    from rubric_runner.config.schema import Isolation
    from rubric_runner.sandbox import ISOLATION_MODES

    assert tuple(Isolation) == ISOLATION_MODES


def test_a_workspace_command_runs_contained_for_an_ordinary_user(ordinary_user):
    """``run_on_files`` (run_tests, workspace_tests) as the ordinary user: the files' tests run, and the command
    sees neither the user's home nor the host's /root, and writes nowhere but its own work dir."""
    (ordinary_user.home / "secret.txt").write_text("the user's own")
    files = {"/calc.py": "def add(a, b):\n    return a + b\n",
             "/tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"}
    command = (f"python -m pytest -q -p no:cacheprovider tests; cat {ordinary_user.home}/secret.txt; ls /root;"
               f" touch {ordinary_user.tree}/scratch/escaped; echo done")
    program = ("import json, sys\n"
               f"sys.path.insert(0, {str(ordinary_user.tree / 'lib')!r})\n"
               "from rubric_runner.sandbox import Limits, isolation_setting, run_on_files\n"
               "with isolation_setting('auto'):\n"
               f"    print(json.dumps(run_on_files({files!r}, {command!r}, Limits(wall_seconds=60))))\n")
    completed = subprocess.run(ordinary_user.command("-I", "-c", program), env=ordinary_user.env("/usr/bin:/bin"),
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["isolation"] == "bwrap" and result["ok"] is True, result
    assert "1 passed" in result["output"] and result["output"].rstrip().endswith("done")
    assert "the user's own" not in result["output"] and not (ordinary_user.tree / "scratch" / "escaped").exists()


# --- shell commands on a workspace (the sandbox backend's execute) ----------------------------------------

COMMAND_PROBE = r'''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubric_runner.sandbox import Limits, isolation_setting, run_command
settings = json.loads(sys.argv[2])
home, workspace, port = settings["home"], Path(settings["workspace"]), settings["port"]
COMMANDS = {
    "reads_home": f"cat {home}/secret.txt",
    "writes_outside": f"echo escaped > {home}/escaped.txt; echo escaped > {workspace.parent}/escaped.txt; echo mine > mine.txt",
    "connects_loopback": f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=1)'",
    "fork_bomb": "b() { b | b & }; b; sleep 30",
    "cpu_loop": "while :; do :; done",
    "fills_disk": "i=0; while [ $i -lt 40 ]; do head -c 4000000 /dev/zero > fill$i || break; i=$((i+1)); done; exit 7",
}
outcomes = {}
with isolation_setting(settings["isolation"]):
    for name, command in COMMANDS.items():
        (workspace / name).mkdir()
        outcomes[name] = run_command(command, workspace / name, Limits(wall_seconds=4, cpu_seconds=1))
print(json.dumps(outcomes))
'''
COMMAND_BOUND_SECONDS = 12.0


def _listener() -> tuple[socket.socket, list]:
    """A loopback listener that counts the connections it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept())

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


def _check_commands(outcomes: dict, home: Path, workspace: Path, backend: str, accepted: list) -> None:
    """Each command was contained: no home read or written, nothing outside its dir, no connection, bounded."""
    for name, result in outcomes.items():
        assert (result["isolation"], result["isolated"]) == (backend, True), (name, result)
        assert result["duration_s"] < COMMAND_BOUND_SECONDS, (name, result)
    assert hostile.SECRET_TEXT not in outcomes["reads_home"]["output"] and outcomes["reads_home"]["exit_code"] != 0
    assert not (home / "escaped.txt").exists() and not (workspace / "escaped.txt").exists()
    assert (workspace / "writes_outside" / "mine.txt").read_text() == "mine\n"
    refused = outcomes["connects_loopback"]
    assert refused["exit_code"] != 0 and ("ConnectionRefusedError" in refused["output"] or "Network is unreachable" in refused["output"])
    assert accepted == []
    bomb = outcomes["fork_bomb"]  # it fills the process limit: the shell waits out its wall clock, or cannot fork its sleep
    assert bomb["killed"] == "wall-clock limit of 4s exceeded" or (bomb["exit_code"] != 0 and "Cannot fork" in bomb["output"]), bomb
    assert outcomes["cpu_loop"]["killed"] in ("CPU time limit exceeded", "killed (CPU time hard limit or out of memory)")
    filled = sum(path.stat().st_size for path in (workspace / "fills_disk").iterdir())
    assert outcomes["fills_disk"]["exit_code"] == 7 and 0 < filled <= bwrap.TMP_BYTES, outcomes["fills_disk"]


def _command_probe(tmp: Path, home: Path, isolation: str) -> tuple[dict, Path, list]:
    """The commands run by this process; (outcomes, workspace, accepted connections)."""
    server, accepted = _listener()
    workspace = tmp / "workspaces"
    workspace.mkdir()
    settings = {"home": str(home), "workspace": str(workspace), "port": server.getsockname()[1], "isolation": isolation}
    try:
        ran = subprocess.run([sys.executable, "-c", COMMAND_PROBE, str(ROOT), json.dumps(settings)],
                             capture_output=True, text=True, timeout=300)
    finally:
        server.close()
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout), workspace, accepted


@pytest.mark.skipif(choose("auto").backend is None, reason="nothing isolates here (rubric-runner doctor says why)")
@pytest.mark.parametrize("isolation", ["auto", pytest.param("namespaces", marks=ROOT_ONLY)])
def test_a_command_on_a_workspace_is_contained(tmp_path, isolation):
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text(hostile.SECRET_TEXT)
    (home / "secret.txt").chmod(0o600)
    outcomes, workspace, accepted = _command_probe(tmp_path, home, isolation)
    _check_commands(outcomes, home, workspace, auto_backend() if isolation == "auto" else isolation, accepted)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_a_command_on_a_workspace_is_contained_for_an_ordinary_user(ordinary_user):
    home = ordinary_user.home
    (home / "secret.txt").write_text(hostile.SECRET_TEXT)
    os.chown(home / "secret.txt", ordinary_user.uid, ordinary_user.gid)
    (home / "secret.txt").chmod(0o600)
    (home / "escaped.txt").unlink(missing_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=ordinary_user.tree / "scratch"))
    workspace = scratch / "workspaces"
    workspace.mkdir()
    for path in (scratch, workspace):
        os.chown(path, ordinary_user.uid, ordinary_user.gid)
    server, accepted = _listener()
    settings = {"home": str(home), "workspace": str(workspace), "port": server.getsockname()[1], "isolation": "auto"}
    try:
        ran = subprocess.run(ordinary_user.command("-I", "-c", COMMAND_PROBE, str(ordinary_user.tree / "lib"), json.dumps(settings)),
                             env=ordinary_user.env("/usr/bin:/bin"), capture_output=True, text=True, timeout=300)
    finally:
        server.close()
    assert ran.returncode == 0, ran.stderr
    _check_commands(json.loads(ran.stdout), home, workspace, "bwrap", accepted)
    assert (workspace / "writes_outside" / "mine.txt").stat().st_uid == ordinary_user.uid


NEIGHBOURS_PROBE = r"""
import json, os, sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubric_runner.sandbox import Limits, isolation_setting, run_command
root, isolation, marker = Path(sys.argv[2]), sys.argv[3], "HOLDS-EVERY-PROCESS"
HOLDER = f"python3 -c 'import os, time  # {marker}\nwhile True:\n    try:\n        os.fork() or time.sleep(60)\n    except OSError:\n        time.sleep(60)'"
limits, outcomes = Limits(wall_seconds=10, processes=8), {}
def run(name, command):
    (root / name).mkdir()
    with isolation_setting(isolation):
        outcomes[name] = run_command(command, root / name, limits)
def holders():
    found = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found += marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            pass
    return found
bomb = threading.Thread(target=run, args=("bomb", HOLDER))
bomb.start()
deadline = time.monotonic() + 8
while holders() < limits.processes - 1 and time.monotonic() < deadline:
    time.sleep(0.1)
outcomes["held"] = holders()
run("neighbour", "for i in 1 2 3 4 5; do sleep 0 & done; wait; echo forked")
bomb.join()
print(json.dumps(outcomes))
"""


def _check_neighbours(outcomes: dict) -> None:
    """The bomb held its whole process limit while its neighbour ran, and the neighbour forked all it asked."""
    assert outcomes["held"] >= 7 and outcomes["bomb"]["killed"] == "wall-clock limit of 10s exceeded", outcomes
    neighbour = outcomes["neighbour"]
    assert (neighbour["exit_code"], neighbour["output"]) == (0, "forked\n"), neighbour


@pytest.mark.skipif(os.getuid() != 0, reason="root's sandboxes (the ordinary user's case is the test after this)")
@pytest.mark.parametrize("isolation", ["auto", "namespaces"])
def test_a_sandbox_holding_its_whole_process_limit_leaves_another_free_to_fork(tmp_path, isolation):
    if choose(isolation).backend is None:
        pytest.skip(choose(isolation).refusal)
    ran = subprocess.run([sys.executable, "-c", NEIGHBOURS_PROBE, str(ROOT), str(tmp_path), isolation],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    _check_neighbours(json.loads(ran.stdout))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_an_ordinary_users_sandbox_holding_its_process_limit_leaves_another_free_to_fork(ordinary_user):
    root = Path(tempfile.mkdtemp(dir=ordinary_user.tree / "scratch"))
    os.chown(root, ordinary_user.uid, ordinary_user.gid)
    ran = subprocess.run(ordinary_user.command("-I", "-c", NEIGHBOURS_PROBE, str(ordinary_user.tree / "lib"), str(root), "auto"),
                         env=ordinary_user.env("/usr/bin:/bin"), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    _check_neighbours(json.loads(ran.stdout))


SESSION_PROBE = r'''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubric_runner.sandbox import Limits, ShellSession, isolation_setting
answers = []
with isolation_setting("auto"), ShellSession(Path(sys.argv[2]), Limits(wall_seconds=4)) as session:
    for command in ("sleep 60 & echo $! > pid; echo one > one.txt", "kill -0 $(cat pid) 2>/dev/null && echo running || echo ended; cat one.txt",
                    "sleep 30", "echo still serving"):
        answers.append(session.run(command))
        answers[-1]["server_alive"] = session.process is not None and session.process.poll() is None
print(json.dumps(answers))
'''


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it as root)")
def test_an_ordinary_users_session_ends_each_commands_leftovers_and_goes_on(ordinary_user):
    """As the ordinary user, the sandbox's server shares the commands' uid: ending a command's leftovers (and a
    command past its wall clock) must reach them all and never the server itself."""
    workspace = Path(tempfile.mkdtemp(dir=ordinary_user.tree / "scratch"))
    os.chown(workspace, ordinary_user.uid, ordinary_user.gid)
    ran = subprocess.run(ordinary_user.command("-I", "-c", SESSION_PROBE, str(ordinary_user.tree / "lib"), str(workspace)),
                         env=ordinary_user.env("/usr/bin:/bin"), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    first, second, stopped, last = json.loads(ran.stdout)
    assert all(answer["isolation"] == "bwrap" and answer["server_alive"] for answer in (first, second, stopped, last))
    assert second["output"] == "ended\none\n", second
    assert stopped["killed"] == "wall-clock limit of 4s exceeded" and last["output"] == "still serving\n", (stopped, last)
    assert (workspace / "one.txt").stat().st_uid == ordinary_user.uid
