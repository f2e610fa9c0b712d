"""The plugins that come with rubric_runner, loaded like any other (``manager.DEFAULT_PLUGINS``): the
built-in evidence tools, and each task set's own reports."""

from __future__ import annotations

from pathlib import Path

from ..report.live import RunReports
from ..tools import files
from ..tools.builtin import run_check, run_test_suite
from .events import RunEnded, TaskEnded
from .hookspecs import hookimpl


class BuiltinTools:
    """Registers ``run_test_suite``, ``run_check`` and the grader's workspace tools (``ls``, ``read_file``,
    ``glob``, ``grep``, ``run_tests``, and the check ``workspace_tests``) through the same hook as any plugin's tools."""

    @hookimpl
    def register_tools(self, register) -> None:
        register(run_test_suite)
        register(run_check)
        for workspace_tool in (files.ls, files.read_file, files.glob, files.grep, files.run_tests, files.workspace_tests):
            register(workspace_tool)


class OwnReports:
    """Keeps each task set's own reports (``RunReports``), from the hooks: a run of more than one task
    gets its reports as its first task ends, and their final form as it ends."""

    def __init__(self) -> None:
        self.runs: dict[str, RunReports] = {}

    @hookimpl
    def on_task_end(self, event: TaskEnded) -> None:
        if event.total > 1:
            if event.run_dir not in self.runs:
                prices = (event.run.config.get("sweep") or {}).get("prices")
                self.runs[event.run_dir] = RunReports(Path(event.run_dir), event.total, prices)
            self.runs[event.run_dir].task_ended()

    @hookimpl
    def on_run_end(self, event: RunEnded) -> None:
        reports = self.runs.pop(str(event.record.run_dir), None)
        if reports is not None:
            reports.close()


TOOLS = BuiltinTools()
REPORTS = OwnReports()
