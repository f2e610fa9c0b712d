"""The plugin contract: every hook a rubric_runner plugin may implement."""

import pluggy

hookspec = pluggy.HookspecMarker("rubric_runner")
hookimpl = pluggy.HookimplMarker("rubric_runner")


@hookspec
def register_tools(register):
    """Register tools by calling ``register(tool, name=None)`` once per tool."""
