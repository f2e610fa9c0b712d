"""Shared fixtures: the offline environment, fake provider keys, one six-job sweep to read; how the xdist
workers share the modules out; the markers of what a test needs beyond this process (``NEEDS``). The
helpers the tests import are in the ``support`` package (``tests/`` is on the path, ``pythonpath`` in
pyproject.toml)."""

from __future__ import annotations

import functools
import inspect
import re
import sys

import pytest
from support.helpers import BUNDLED_PLUGINS, DATA

from rubric_runner.environment import API_KEY_ENV

sys.path.insert(0, str(DATA))

CLUSTER_MODULES = ("tests/cli/test_clusters.py", "tests/cli/test_launchers.py")
"""They start Ray and SLURM clusters, whose daemons take fixed ports (Ray's 10001 and 52365) and the CPUs."""


NEEDS = {
    "bwrap": re.compile(r"\b(matrix_here|matrix_as_user|installed_for_user|setpriv)\b|which\(\"bwrap\"\)"
                        r"|parametrize\(\"isolation\", \[[^\]]*\"namespaces\""),
    "browser": re.compile(r"\b(browser|headless_chromium|browse|timed_dom|layout|chromium)\("),
    "cli": re.compile(r"\b(run_cli|cli_process|on_terminal|run_six_job_sweep|six_job_sweep|Forks)\b"
                      r"|\bsubprocess\.(run|Popen|check_output)\("),
}
"""Each marker, and what in a test's code (its own, its fixtures', the module's functions they name) says the
test needs it: bubblewrap, the namespace backend (a test run under each ``isolation``, ``namespaces`` among
them) or an ordinary user (``setpriv``); a browser; a subprocess (the command line's, the joints' fork
server's, or another program's). ``postgres`` marks the tests that use a ``POSTGRES_FIXTURES``, ``cluster``
the ``CLUSTER_MODULES``; ``slow`` (a long run) is set where the test is."""
POSTGRES_FIXTURES = {"postgres", "pg_env"}


@functools.cache
def _source(function) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


@functools.cache
def _words(function) -> frozenset[str]:
    """The names in a function's source."""
    return frozenset(re.findall(r"\w+", _source(function)))


@functools.cache
def _helpers(module) -> dict[str, object]:
    """The module's own functions, by name."""
    return {name: value for name, value in vars(module).items() if inspect.isfunction(value)
            and value.__module__ == module.__name__}


def _code_of(item: pytest.Item) -> str:
    """The test's source, its fixtures' and that of the module's functions they name (called, or handed on).
    Sources and their names are read once per function: the suite's tests share fixtures and helpers."""
    fixtures = [defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values()]
    text = "\n".join(_source(function) for function in [item.function, *fixtures])
    helpers = _helpers(item.module)
    named = frozenset().union(*map(_words, [item.function, *fixtures]))
    seen: set[str] = set()
    while called := {name for name in helpers if name not in seen and name in named}:
        seen |= called
        text += "\n" + "\n".join(_source(helpers[name]) for name in called)
        named = named.union(*(_words(helpers[name]) for name in called))
    return text


def pytest_collection_modifyitems(config, items):
    """Mark each test with what it needs (``NEEDS``), so that ``-m "not ..."`` leaves it out."""
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        path = item.nodeid.split("::")[0]
        code = _code_of(item)
        needs = {name for name, pattern in NEEDS.items() if pattern.search(code)}
        needs |= {"postgres"} if POSTGRES_FIXTURES & set(item.fixturenames) else set()
        needs |= {"cluster"} if path in CLUSTER_MODULES else set()
        for name in sorted(needs):
            item.add_marker(name)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (pyproject.toml: each module's tests on one worker, in order) with the cluster
    modules taken as one module, so that no two clusters run at once."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ClustersTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return CLUSTER_MODULES[0] if module in CLUSTER_MODULES else module

    return ClustersTogether(config, log)


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    """No provider keys, and only the bundled entry-point plugins unless a test asks for others."""
    for names in API_KEY_ENV.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", BUNDLED_PLUGINS)


@pytest.fixture
def fake_keys(monkeypatch):
    """Fake provider keys in the environment (see ``wire.FAKE_KEYS``)."""
    from support.wire import FAKE_KEYS

    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    return FAKE_KEYS


@pytest.fixture(scope="session")
def six_job_sweep(tmp_path_factory):
    """``sweeps.run_six_job_sweep`` run once for the tests that only read it (a test that changes it
    works on a copy): (completed process, sweep dir, the dir it ran in)."""
    from support.sweeps import run_six_job_sweep

    tmp = tmp_path_factory.mktemp("six_job_sweep")
    proc, sweep_dir = run_six_job_sweep(tmp)
    return proc, sweep_dir, tmp


@pytest.fixture(scope="session")
def workspace_run(tmp_path_factory):
    """``sweeps.WORKSPACE_RUN`` run here once, in this process: its dir, whose records each job of a workspace
    sweep must match (``sweeps.check_workspace_sweep``). Its story checked first: every task satisfied on its
    second attempt, whose hidden checks pass where the first attempt's failed (protected_test's tampered)."""
    from support.sweeps import WORKSPACE_RUN, workspace_outcomes

    import rubric_runner

    run_dir = tmp_path_factory.mktemp("workspace_run") / "run"
    assert rubric_runner.run(list(WORKSPACE_RUN), run_dir).status.value == "satisfied"
    told = workspace_outcomes(run_dir)
    assert {key: (told[key]["status"], [outcome for _, outcome in told[key]["hidden"]], told[key]["final_hidden"])
            for key in told} == {
        "fix_median-r0": ("satisfied", [[("workspace_tests", "failed")], [("workspace_tests", "passed")]], "passed"),
        "protected_test-r0": ("satisfied", [[("workspace_tests", "failed"), ("protected_files", "failed")],
                                            [("workspace_tests", "passed")]], "passed")}
    return run_dir
