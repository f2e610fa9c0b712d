"""The plugin contract: every hook a rubric_runner plugin may implement."""

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
def on_evaluation(evaluation, task):
    """See each grading pass: the ``RubricEvaluation`` dict and the ``TaskRef`` it belongs to."""


@hookspec
def on_run_end(record):
    """See each finished run: its ``RunRecord``, complete and written, however the run ended."""
