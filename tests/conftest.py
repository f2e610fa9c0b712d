"""Shared fixtures: the offline environment, fake provider keys, one six-job sweep to read; how the xdist
workers share the modules out. The helpers the tests import are in the ``support`` package (``tests/`` is
on the path, ``pythonpath`` in pyproject.toml)."""

from __future__ import annotations

import sys

import pytest
from support.helpers import BUNDLED_PLUGINS, DATA

from rubric_runner.environment import API_KEY_ENV

sys.path.insert(0, str(DATA))

CLUSTER_MODULES = ("tests/cli/test_clusters.py", "tests/cli/test_launchers.py")
"""They start Ray and SLURM clusters, whose daemons take fixed ports (Ray's 10001 and 52365) and the CPUs."""


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
