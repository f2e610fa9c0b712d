"""text_stats: sentences, words, required terms and sections, and the entry point."""

from __future__ import annotations

import pytest
from rubric_runner_textstats import has_term, headings, sentences, text_stats

REPORT = """# Leaf study

## Summary
Dr. Lee measured 3.5 g of leaves, e.g. oak and ash. Chlorophyll absorbed most red light!

Methods:
- We dried the leaves. Then we weighed them
- We repeated it twice
"""


def test_sentences_respect_abbreviations_decimals_paragraphs_and_list_items():
    assert sentences(REPORT) == [
        "Dr. Lee measured 3.5 g of leaves, e.g. oak and ash.",
        "Chlorophyll absorbed most red light!",
        "We dried the leaves.",
        "Then we weighed them",
        "We repeated it twice",
    ]


def test_quoted_sentence_end_and_a_word_ending_like_an_abbreviation():
    assert sentences('He said "done." Then he came first. Next was Ms. Ray.') == [
        'He said "done."',
        "Then he came first.",
        "Next was Ms. Ray.",
    ]


def test_counts_and_checks_from_settings():
    result = text_stats.invoke(
        {"text": REPORT, "required_terms": ["light", "leaf", "carbon dioxide"], "required_sections": ["summary", "Methods", "Results"]}
    )
    assert (result["sentence_count"], result["word_count"]) == (5, 33)
    assert result["terms"] == {"light": True, "leaf": True, "carbon dioxide": False}
    assert result["missing_terms"] == ["carbon dioxide"]
    assert result["sections"] == ["Leaf study", "Summary", "Methods"]
    assert result["missing_sections"] == ["Results"]
    assert result["ok"] is False


def test_ok_when_nothing_required_is_missing():
    assert text_stats.invoke({"text": REPORT, "required_terms": ["light"], "required_sections": ["Methods"]})["ok"] is True
    assert text_stats.invoke({"text": REPORT, "required_terms": ["carbon dioxide"]})["ok"] is False
    assert text_stats.invoke({"text": REPORT, "required_sections": ["Results"]})["ok"] is False


def test_without_settings_only_counts():
    result = text_stats.invoke({"text": "Photosynthesis turns light into sugar."})
    assert result == {"sentence_count": 1, "word_count": 5, "sentences": ["Photosynthesis turns light into sugar."]}


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("Leaves capture LIGHT.", "light", True),
        ("Sunlight matters.", "light", False),
        ("Two leafs", "leaf", True),
        ("The leaflet", "leaf", False),
        ("carbon\n dioxide is used", "carbon dioxide", True),
        ("a C++ compiler", "C++", True),
    ],
)
def test_terms_match_whole_words_and_phrases(text, term, found):
    assert has_term(text, term) is found


def test_headings_are_markdown_or_colon_lines():
    assert headings("# One\n**Two:**\nThree: not a heading line.\n  ## Four ##\n") == ["One", "Two", "Four"]


def test_registered_through_the_entry_point_with_checked_settings(monkeypatch):
    from rubric_runner.errors import UsageError
    from rubric_runner.plugins.manager import Plugins
    from rubric_runner.plugins.registry import ToolRegistry, bind_settings

    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "textstats")
    entry = ToolRegistry(Plugins()).find("text_stats", "grader.tools.text_stats")
    assert (entry.plugin, entry.package) == ("textstats", "rubric_runner_textstats")
    configured = bind_settings(entry.tool, {"required_terms": ["light", "chlorophyll"]}, "grader.tools.text_stats")
    assert configured.invoke({"text": "Chlorophyll absorbs light."})["missing_terms"] == []
    with pytest.raises(UsageError, match=r"^grader\.tools\.text_stats\.required_terms: .*at least 1 character"):
        bind_settings(entry.tool, {"required_terms": ["light", " "]}, "grader.tools.text_stats")
