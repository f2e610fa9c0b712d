"""The plugin contract: every hook a rubric_runner plugin may implement."""

import pluggy

hookspec = pluggy.HookspecMarker("rubric_runner")
hookimpl = pluggy.HookimplMarker("rubric_runner")


@hookspec
def register_tools(register):
    """Register tools by calling ``register(tool, name=None)`` once per tool."""


@hookspec
def register_commands(subparsers):
    """Add commands to ``rubric-runner`` with ``subparsers.add_parser(name, ...)``; each sets
    ``handler``, a function of the parsed arguments returning the exit code."""
