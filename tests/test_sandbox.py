"""run_test_suite's sandbox: both suite kinds, structured results, and hostile code contained.

Every hostile case runs through the tool with settings from config, with small limits (wall 3s,
CPU 1s, 256 MiB), and must end in bounded time with a clear result; afterwards the runner process
still runs a correct solution and no sandboxed process is left behind.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from rubric_runner import sandbox
from rubric_runner.builtin_tools import run_test_suite
from rubric_runner.config import ConfigError
from rubric_runner.tools import bind_settings

KEY = "grader.tools.run_test_suite"
SUITES = ROOT / "rubric_runner" / "data" / "suites"
LIMITS = {"wall_seconds": 3, "cpu_seconds": 1, "memory_mb": 256}
BOUND_SECONDS = 6.0  # the wall limit, plus the interpreter's start and teardown, with room to spare
GOOD = "def f():\n    return 1\n"


@pytest.fixture(params=["cases", "pytest"])
def suite(request, tmp_path):
    """A one-test suite for ``f() == 1``, as a YAML case table or as a pytest file."""
    if request.param == "cases":
        path = tmp_path / "suite.yaml"
        path.write_text("function: f\ncases:\n  - {name: test_f, expected: 1}\n")
    else:
        path = tmp_path / "test_f.py"
        path.write_text("from solution import f\n\n\ndef test_f():\n    assert f() == 1\n")
    return path


def sandboxed(code: str, suite: Path, **settings) -> tuple[dict, float]:
    """Run ``code`` through the configured tool; the result and how long it took."""
    tool = bind_settings(run_test_suite, {"suite": str(suite), **LIMITS, **settings}, KEY)
    started = time.monotonic()
    result = tool.invoke({"code": code})
    return result, time.monotonic() - started


def _sandbox_processes() -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(sandbox.CHILD).encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.fixture
def runner_unharmed(suite):
    """After the test: no sandboxed process is left, and a correct solution still passes."""
    yield
    deadline = time.monotonic() + 2
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []
    result, _ = sandboxed(GOOD, suite)
    assert result["ok"] is True, result


@pytest.mark.parametrize("name", ["find_duplicates.yaml", "test_find_duplicates.py"])
def test_both_suite_kinds_report_the_same_tests(name):
    script = yaml.safe_load((ROOT / "rubric_runner" / "data" / "scripts" / "code.yaml").read_text())
    first, _ = sandboxed(script["first_attempt"], SUITES / name, wall_seconds=10, cpu_seconds=5, memory_mb=512)
    second, _ = sandboxed(script["second_attempt"], SUITES / name, wall_seconds=10, cpu_seconds=5, memory_mb=512)
    assert (first["ok"], first["failures"]) == (False, ["test_unhashable: TypeError: unhashable type: 'list'"])
    assert first["passed"] == ["test_basic", "test_empty", "test_no_duplicates"]
    assert second["ok"] is True and second["failures"] == []
    assert {"timed_out", "killed", "exit_code", "duration_s", "output_tail", "isolated"} <= set(second)
    assert second["isolated"] is (os.getuid() == 0)


def test_pytest_file_reports_per_test_failures_and_its_output(tmp_path):
    tests = tmp_path / "test_calc.py"
    tests.write_text(textwrap.dedent("""
        import pytest
        from calc import add

        def test_add():
            assert add(2, 2) == 4

        @pytest.mark.parametrize("a", [1, 2])
        def test_negative(a):
            assert add(a, -a) == 0

        def test_big():
            assert add(10**6, 1) == 10**6 + 1
    """))
    code = "```python\ndef add(a, b):\n    print('adding', a, b)\n    return a + b if a < 1000 else a\n```"
    result, _ = sandboxed(code, tests, module="calc")
    assert result["ok"] is False
    assert result["passed"] == ["test_add", "test_negative[1]", "test_negative[2]"]
    assert result["failures"] == ["test_big: assert 1000000 == ((10 ** 6) + 1)"]
    assert "1 failed, 3 passed" in result["output_tail"]


def test_pytest_file_that_cannot_import_the_candidate(tmp_path):
    tests = tmp_path / "test_x.py"
    tests.write_text("from solution import missing\n\n\ndef test_x():\n    pass\n")
    result, _ = sandboxed("def present():\n    pass\n", tests)
    assert result["ok"] is False
    assert result["failures"] == [
        "collecting test_x.py: ImportError: cannot import name 'missing' from 'solution' (/tmp/sandbox/solution.py)"
    ]


def test_failure_messages_are_bounded(tmp_path):
    table = tmp_path / "many.yaml"
    cases = "".join(f"  - {{name: c{i}, expected: 0}}\n" for i in range(80))
    table.write_text(f"function: f\ncases:\n{cases}")
    result, _ = sandboxed("def f():\n    return 'x' * 100_000\n", table)
    assert len(result["failures"]) == 51 and result["failures"][-1] == "... and 30 more failures"
    assert all(len(message) <= 503 for message in result["failures"])


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"suite": "/nonexistent/suite.yaml"}, "suite: Path does not point to a file"),
        ({"suite": str(ROOT / "README.md")}, "suite: README.md: a suite is a .yaml case table or a pytest .py file"),
        ({"suite": str(ROOT / "pyproject.toml")}, "suite: pyproject.toml: a suite is a .yaml case table"),
        ({"suite": str(SUITES / "find_duplicates.yaml"), "module": "not a module"}, "module: String should match"),
        ({"suite": str(SUITES / "find_duplicates.yaml"), "cpu_seconds": 0}, "cpu_seconds: Input should be greater than 0"),
        ({"suite": str(SUITES / "find_duplicates.yaml"), "timeout": 3}, "timeout: tool 'run_test_suite' has no setting"),
        ({"cases": "not a list"}, "cases: Input should be a valid list"),
    ],
)
def test_bad_settings_name_the_config_key(settings, problem):
    with pytest.raises(ConfigError) as caught:
        bind_settings(run_test_suite, settings, KEY)
    assert str(caught.value).startswith(f"{KEY}.{problem}")
    assert "\n" not in str(caught.value)


# --- hostile code ---------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_unharmed")
def test_infinite_loop_is_stopped_by_the_cpu_limit(suite):
    result, seconds = sandboxed("def f():\n    while True:\n        pass\n", suite)
    assert result["ok"] is False and result["killed"] == "CPU time limit exceeded"
    assert result["failures"] == ["sandbox: CPU time limit exceeded"]
    assert seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
@pytest.mark.parametrize("suite", ["cases"], indirect=True)  # the limits do not depend on the suite kind
def test_sleeping_forever_is_stopped_by_the_wall_clock(suite):
    result, seconds = sandboxed("import time\n\ndef f():\n    while True:\n        time.sleep(1)\n", suite)
    assert result["timed_out"] is True and result["killed"] == "wall-clock limit of 3.0s exceeded"
    assert 3 <= seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
@pytest.mark.parametrize("suite", ["cases"], indirect=True)  # the limits do not depend on the suite kind
def test_memory_hog_gets_a_memory_error(suite):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, seconds = sandboxed("def f():\n    hog = []\n    while True:\n        hog.append(bytearray(10**7))\n", suite)
    assert result["ok"] is False and "MemoryError" in result["failures"][0]
    assert seconds < BOUND_SECONDS
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: the runner did not grow


@pytest.mark.usefixtures("runner_unharmed")
@pytest.mark.parametrize("suite", ["cases"], indirect=True)  # the limits do not depend on the suite kind
def test_fork_bomb_is_contained(suite):
    code = "import os\n\ndef f():\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n"
    result, seconds = sandboxed(code, suite)
    assert result["ok"] is False and result["killed"] is not None
    assert seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
def test_environment_holds_no_keys(suite, monkeypatch):
    fake_key = "sk-fake-key-for-the-sandbox-test-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", fake_key)
    code = f"""
import os

def f():
    try:
        runner = open("/proc/{os.getpid()}/environ").read()
    except OSError as exc:
        runner = type(exc).__name__
    return {{"environ": dict(os.environ), "runner_environ": runner}}
"""
    result, seconds = sandboxed(code, suite)
    assert fake_key not in json.dumps(result)
    assert "OPENAI_API_KEY" not in json.dumps(result)
    assert "'runner_environ': 'PermissionError'" in result["failures"][0]
    assert seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
def test_cannot_write_outside_its_temp_dir(suite, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    targets = [shared / "escaped.txt", ROOT / "escaped.txt", Path.home() / "escaped.txt", Path("/tmp/escaped.txt")]
    code = f"""
def f():
    outcome = {{}}
    for path in {[str(t) for t in targets]!r}:
        try:
            with open(path, "w") as handle:
                handle.write("escaped")
            outcome[path] = "written"
        except OSError as exc:
            outcome[path] = type(exc).__name__
    return outcome
"""
    result, seconds = sandboxed(code, suite)
    assert result["ok"] is False
    for target in targets:
        assert not target.exists(), f"{target} was written from the sandbox"
    assert seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
def test_cannot_reach_a_local_listener(suite):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        code = f"""
import socket

def f():
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc)
"""
        result, seconds = sandboxed(code, suite)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert "Network is unreachable" in result["failures"][0], result["failures"]
    assert seconds < BOUND_SECONDS


@pytest.mark.usefixtures("runner_unharmed")
@pytest.mark.parametrize("suite", ["cases"], indirect=True)  # the limits do not depend on the suite kind
def test_printing_megabytes_is_cut_off(suite):
    result, seconds = sandboxed("def f():\n    while True:\n        print('x' * 1_000_000)\n", suite)
    assert result["killed"] == "output limit of 8 MiB exceeded"
    assert len(result["output_tail"]) <= 2000
    assert seconds < BOUND_SECONDS


@pytest.mark.skipif(os.getuid() != 0, reason="namespaces need root")
@pytest.mark.parametrize("where", ["home", "tmp"])
def test_pytest_in_a_hidden_place_is_exposed_and_nothing_else_there(where, tmp_path, monkeypatch):
    """pytest installed under a private home or under /tmp (both covered in the sandbox) still imports."""
    base = Path.home() if where == "home" else Path(tempfile.gettempdir())
    if where == "home" and base.stat().st_mode & 0o001:
        pytest.skip("the home directory is not private here")
    place = Path(tempfile.mkdtemp(prefix=".rubric-sandbox-test-", dir=base))
    secret = base / f"{place.name}-secret"
    try:
        site = place / "site-packages"
        for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py"):
            source = Path(sandbox.pytest_path()) / name
            if source.is_dir():
                shutil.copytree(source, site / name)
            elif source.exists():
                shutil.copy2(source, site / name)
        secret.write_text("hidden")
        monkeypatch.setattr(sandbox, "pytest_path", lambda: str(site))
        tests = tmp_path / "test_hidden.py"
        tests.write_text(
            "import os\nimport pytest\n\n\n"
            f"def test_hidden():\n    assert pytest.__file__.startswith({str(site)!r})\n"
            f"    listed = os.listdir({str(base)!r})\n"
            f"    assert {place.name!r} in listed and {secret.name!r} not in listed\n"
        )
        result, _ = sandboxed(GOOD, tests)
        assert result["ok"] is True, result
    finally:
        shutil.rmtree(place)
        secret.unlink(missing_ok=True)


def test_inline_cases_and_a_missing_suite():
    from rubric_runner.builtin_tools import run_test_suite

    cases = [{"name": "test_double", "args": [2], "expected": 4}]
    result = run_test_suite.invoke({"code": "def double(x):\n    return x * 2\n", "function": "double", "cases": cases})
    assert result["ok"] and result["passed"] == ["test_double"]
    empty = run_test_suite.invoke({"code": "x = 1"})
    assert not empty["ok"] and empty["failures"] == ["run_test_suite has neither a suite nor cases configured"]
