"""text_stats as a plugin of its own: the tool is rubric_runner's (``rubric_runner.plugins.textstats``, loaded
as the ``textstats`` plugin when no package installs one), so a plain install runs the summary rubric; this
package is the same plugin in its smallest installable form, an example of a plugin's layout."""

from rubric_runner.plugins.textstats import has_term, headings, register_tools, sentences, text_stats

__all__ = ["has_term", "headings", "register_tools", "sentences", "text_stats"]
