"""count_syllables as a plugin of its own: the tool is rubric_runner's (``rubric_runner.plugins.syllables``,
loaded as the ``syllables`` plugin when no package installs one), so a plain install runs the default
rubric; this package is the same plugin in its smallest installable form, an example of a plugin's layout."""

from rubric_runner.plugins.syllables import count_lines, count_syllables, count_word, dictionary, estimate, register_tools

__all__ = ["count_lines", "count_syllables", "count_word", "dictionary", "estimate", "register_tools"]
