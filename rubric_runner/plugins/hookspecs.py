"""The plugin contract: every hook a rubric_runner plugin may implement.

Hooks are called with keyword arguments; an event hook gets one frozen ``plugins.events`` object.
A hook that raises is logged as a ``hook_error`` naming its plugin, and the run goes on.
"""

import pluggy

hookspec = pluggy.HookspecMarker("rubric_runner")
hookimpl = pluggy.HookimplMarker("rubric_runner")


@hookspec
def register_tools(register):
    """Register tools by calling ``register(tool, name=None)`` once per tool."""


@hookspec
def register_commands(subparsers):
    """Add commands with ``subparsers.add_parser(name, ...)``, each setting ``handler(args) -> exit code``."""


@hookspec
def on_evaluation(event):
    """See each grading pass: a ``GradingPassed`` (the evaluation and the task it graded)."""


@hookspec
def on_task_end(event):
    """See each task as its record is written: a ``TaskEnded`` (the record, the task, how far the run is)."""


@hookspec
def on_run_end(event):
    """See each finished run: a ``RunEnded`` (its record, complete and written, however the run ended)."""
