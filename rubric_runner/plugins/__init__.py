"""Plugins: the hook specs, the plugin manager, and code that config plugs into the loop."""
