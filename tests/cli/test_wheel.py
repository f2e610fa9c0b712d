"""Installed from its wheel alone, into a fresh venv (the dependencies from pip's index, no plugin package):
the default rubric and every other rubric the README shows run offline on the scripted models, and
``--version`` is rubric_runner's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import ROOT

import rubric_runner

pytestmark = pytest.mark.slow  # a wheel built and installed, with its dependencies from pip's index, into a fresh venv

RUBRICS = {"the default (haiku)": [], "summary": ["rubric=summary"], "code": ["rubric=code"], "code_tasks": ["rubric=code_tasks"]}


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh venv holding the wheel built from this checkout and its dependencies only (put
    there by this environment's pip: the venv needs no pip of its own, whose install takes seconds)."""
    root = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(ROOT), "-w", str(root / "dist"), cwd=root)
    [wheel] = (root / "dist").glob("rubric_runner-*.whl")
    _run(sys.executable, "-m", "venv", "--without-pip", str(root / "venv"), cwd=root)
    python = root / "venv" / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel), cwd=root)
    return python


def _env() -> dict[str, str]:
    """This environment without the tests' plugin choice and import path: the venv as a user has it."""
    return {k: v for k, v in os.environ.items() if k not in ("RUBRIC_RUNNER_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV")}


@pytest.mark.parametrize("rubric", RUBRICS)
def test_every_readme_rubric_runs_from_the_wheel(installed, tmp_path, rubric):
    done = _run(str(installed), "-m", "rubric_runner", "worker=scripted", "grader=scripted", *RUBRICS[rubric],
                f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env=_env())
    assert "status: satisfied" in done.stdout
    assert str(ROOT) not in _run(str(installed), "-c", "import rubric_runner; print(rubric_runner.__file__)",
                                 cwd=tmp_path, env=_env()).stdout  # the wheel's copy ran, not this checkout's


def test_the_wheels_version_and_plugins_are_its_own(installed, tmp_path):
    version = _run(str(installed), "-m", "rubric_runner", "--version", cwd=tmp_path, env=_env())
    assert version.stdout == f"rubric_runner {rubric_runner.__version__}\n"
    listed = _run(str(installed), "-m", "rubric_runner", "plugins", cwd=tmp_path, env=_env()).stdout
    packages = {line.split()[0]: line.split()[1] for line in listed.splitlines() if line.strip()}
    assert packages == dict.fromkeys(("builtin_tools", "reports", "syllables", "textstats"), "rubric_runner")
