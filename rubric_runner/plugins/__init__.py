"""Plugins: the hook specs and events, the plugin manager, the tool registry, the plugins that come with
rubric_runner, and code that config plugs into the loop."""
