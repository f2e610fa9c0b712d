"""run_test_suite's sandbox: both suite kinds, structured results, settings, and what the code can see.

The hostile-code matrix (escapes, limits, leftovers) for each isolation backend and user is in
tests/sandbox/test_isolation.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from support.helpers import ROOT, copy_pytest
from support.hostile import adopting, left_behind

from rubric_runner.errors import UsageError
from rubric_runner.plugins.registry import bind_settings
from rubric_runner.sandbox import Limits, choose, isolation_setting, run_cases
from rubric_runner.tools.builtin import load_suite, run_test_suite, strip_fences

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


@pytest.fixture
def runner_unharmed(suite):
    """After the test: no sandboxed process is left, and a correct solution still passes."""
    with adopting():
        yield
        assert left_behind(2.0) == []
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
    assert {"timed_out", "killed", "exit_code", "output_tail", "isolation", "isolated"} <= set(second)
    assert "duration_s" not in second  # what differs from run to run stays out of what the grader reads
    code = script["second_attempt"]
    assert "duration_s" in run_cases(strip_fences(code), *load_suite(SUITES / "find_duplicates.yaml"), Limits())
    assert (second["isolation"], second["isolated"]) == (choose("auto").backend, True)


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
    with pytest.raises(UsageError) as caught:
        bind_settings(run_test_suite, settings, KEY)
    assert str(caught.value).startswith(f"{KEY}.{problem}")
    assert "\n" not in str(caught.value)


# --- what the code can reach ---------------------------------------------------------------------------


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


@pytest.mark.skipif(os.getuid() != 0, reason="a private home and these backends need root")
@pytest.mark.parametrize("isolation", ["auto", "namespaces"])
@pytest.mark.parametrize("where", ["home", "tmp"])
def test_pytest_in_a_hidden_place_is_exposed_and_nothing_else_there(where, isolation, tmp_path, monkeypatch):
    """pytest installed under a private home or under /tmp (both hidden in the sandbox) still imports."""
    base = Path.home() if where == "home" else Path(tempfile.gettempdir())
    if where == "home" and base.stat().st_mode & 0o001:
        pytest.skip("the home directory is not private here")
    place = Path(tempfile.mkdtemp(prefix=".rubric-sandbox-test-", dir=base))
    secret = base / f"{place.name}-secret"
    try:
        site = copy_pytest(place / "site-packages")
        secret.write_text("hidden")
        monkeypatch.setattr("rubric_runner.sandbox.run.pytest_path", lambda: str(site))
        tests = tmp_path / "test_hidden.py"
        tests.write_text(
            "import os\nimport pytest\n\n\n"
            f"def test_hidden():\n    assert pytest.__file__.startswith({str(site)!r})\n"
            f"    listed = os.listdir({str(base)!r})\n"
            f"    assert {place.name!r} in listed and {secret.name!r} not in listed\n"
        )
        with isolation_setting(isolation):
            result, _ = sandboxed(GOOD, tests)
        assert result["ok"] is True, result
    finally:
        shutil.rmtree(place)
        secret.unlink(missing_ok=True)


def test_inline_cases_and_a_missing_suite():
    from rubric_runner.tools.builtin import run_test_suite

    cases = [{"name": "test_double", "args": [2], "expected": 4}]
    result = run_test_suite.invoke({"code": "def double(x):\n    return x * 2\n", "function": "double", "cases": cases})
    assert result["ok"] and result["passed"] == ["test_double"]
    empty = run_test_suite.invoke({"code": "x = 1"})
    assert not empty["ok"] and empty["failures"] == ["run_test_suite has neither a suite nor cases configured"]
