"""The evidence tools that come with rubric_runner (``plugins.builtin`` registers them)."""
