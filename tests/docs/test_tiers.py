"""The test tiers: each test is marked with what it needs beyond its process (tests/conftest.py ``NEEDS``), so
that the fast tier, ``-m "not (cluster or postgres or bwrap or browser or cli or slow)"``, runs only
in-process tests; a marker pyproject.toml does not register is refused."""

from __future__ import annotations

import os
import subprocess
import sys

from support.helpers import ROOT

FAST = "not (cluster or postgres or bwrap or browser or cli or slow)"
TIERS = ("cluster", "postgres", "bwrap", "browser", "cli", "slow")
SHOW_MARKS = '''
def pytest_collection_finish(session):
    for item in session.items:
        print("marks", item.nodeid, ",".join(sorted(m.name for m in item.iter_markers() if m.name in {tiers!r})))
'''


def collect(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """``pytest --collect-only`` of ``args`` in a subprocess, with a plugin that prints each test's tier markers."""
    (tmp_path / "show_marks.py").write_text(SHOW_MARKS.format(tiers=set(TIERS)))
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "-p", "show_marks", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})


def marks(tmp_path, *modules: str) -> dict[str, set[str]]:
    """Each collected test of ``modules``, and its tier markers."""
    proc = collect(tmp_path, *modules)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.removeprefix("marks ").rpartition(" ") for line in proc.stdout.splitlines() if line.startswith("marks ")]
    return {test: set(filter(None, names.split(","))) for test, _, names in rows}


def test_each_test_is_marked_with_what_it_needs(tmp_path):
    found = marks(tmp_path, "tests/cli/test_commands.py", "tests/loop/test_postgres.py", "tests/report/test_review_page.py",
                  "tests/docs/test_layout.py")
    # a subprocess in the test itself; a fixture that needs a server; a browser in a fixture; in-process tests
    assert found["tests/cli/test_commands.py::test_tools_console_script_lists_every_tool_with_its_origin_and_settings"] == {"cli"}
    assert found["tests/loop/test_postgres.py::test_a_run_checkpoints_to_postgres"] >= {"postgres"}
    assert found["tests/report/test_review_page.py::test_a_person_labels_two_tasks_reloads_and_the_labels_reach_the_report"] >= {"browser"}
    assert found["tests/cli/test_commands.py::test_plugins_lists_loaded_plugins_with_versions"] == set()
    assert found["tests/loop/test_postgres.py::test_a_password_in_checkpoint_url_is_refused[host=db user=rubric password=hunter2-long]"] == set()
    assert found["tests/docs/test_layout.py::test_no_import_circles"] == set()


def test_ordinary_users_namespaces_forks_and_installs_are_marked(tmp_path):
    found = marks(tmp_path, "tests/loop/test_trust.py", "tests/sandbox/test_sandbox.py", "tests/loop/test_joints.py",
                  "tests/cli/test_wheel.py")
    # an ordinary user through setpriv; a test run under the namespace backend; the joints' fork server; a wheel
    # installed with its dependencies
    assert found["tests/loop/test_trust.py::test_an_ordinary_users_files_are_safe_from_a_tampered_run_dir"] == {"bwrap", "cli"}
    assert found["tests/sandbox/test_sandbox.py::test_pytest_in_a_hidden_place_is_exposed_and_nothing_else_there[home-namespaces]"] == {"bwrap"}
    assert found["tests/sandbox/test_sandbox.py::test_cannot_write_outside_its_temp_dir[cases]"] == set()
    assert found["tests/loop/test_joints.py::test_joint[preset-regrade]"] == {"cli", "slow"}
    assert found["tests/cli/test_wheel.py::test_the_wheels_version_and_plugins_are_its_own"] == {"cli", "slow"}


def test_a_marker_pyproject_does_not_register_is_refused(tmp_path):
    (tmp_path / "test_typo.py").write_text("import pytest\n\n\n@pytest.mark.clusterr\ndef test_x():\n    pass\n")
    proc = collect(tmp_path, "-c", str(ROOT / "pyproject.toml"), str(tmp_path / "test_typo.py"))
    assert proc.returncode != 0 and "'clusterr' not found in `markers` configuration option" in proc.stdout + proc.stderr
