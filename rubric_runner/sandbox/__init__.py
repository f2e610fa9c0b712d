"""Run generated Python in a separate, isolated interpreter: the API for built-in and plugin tools.

- ``run_cases(code, function, cases, limits)`` and ``run_pytest(code, module, test_name,
  test_source, limits)`` run the code and return a structured result (``ok``, ``passed``,
  ``failures``, ``killed``, ``isolation``, ...); ``run_command(command, workspace, limits)`` runs a
  shell command on a copy of a dir and mirrors the copy back (``output``, ``exit_code``, ``killed``, ...),
  ``ShellSession(workspace, limits)`` runs many in one sandbox kept for them (``.run(command)``),
  ``run_on_files(files, command, limits)`` the same on a fresh dir of files (``ok`` when it exits 0);
  ``Limits`` bounds time, memory, processes and output; ``pytest_path()`` says whether pytest-file
  suites can run.
- Isolation follows the current setting (``sandbox.isolation`` of the run, default ``auto``):
  ``isolation_setting(mode, notify)`` sets it for a block of code, ``ISOLATION_MODES`` lists the
  modes, ``choose(mode)`` says which backend would run code now (or why none would) and
  ``unavailable(backend)`` why one cannot.
"""

from .isolation import ISOLATION_MODES, Choice, choose, isolation_setting, unavailable
from .run import Limits, pytest_path, run_cases, run_pytest
from .session import ShellSession, run_command, run_on_files

__all__ = [
    "ISOLATION_MODES",
    "Choice",
    "Limits",
    "ShellSession",
    "choose",
    "isolation_setting",
    "pytest_path",
    "run_cases",
    "run_command",
    "run_on_files",
    "run_pytest",
    "unavailable",
]
