"""count_syllables: dictionary counts, the fallback heuristic, patterns, and the entry point."""

from __future__ import annotations

import pytest
from rubric_runner_syllables import count_syllables, count_word, estimate

HAIKU = "Cherry blossoms fall\nsoft rain wakes the sleeping seeds\ngreen returns to earth"


def test_counts_each_line_from_the_dictionary():
    result = count_syllables.invoke({"text": HAIKU})
    assert result["line_count"] == 3 and result["syllables"] == [5, 7, 5]
    assert result["lines"][1] == {
        "text": "soft rain wakes the sleeping seeds",
        "syllables": 7,
        "words": "soft=1 rain=1 wakes=1 the=1 sleeping=2 seeds=1",
    }
    assert result["estimated_words"] == [] and "pattern" not in result


@pytest.mark.parametrize(
    ("word", "syllables"),
    [("chlorophyll", 3), ("fire", 2), ("haiku", 2), ("beautiful", 3), ("the", 1), ("spring's", 1), ("Wednesday", 2)],
)
def test_dictionary_words_use_their_first_pronunciation(word, syllables):
    assert count_word(word) == (syllables, True)


@pytest.mark.parametrize(
    ("word", "syllables"),
    [("blorptastic", 3), ("glimmerwing", 3), ("zorple", 2), ("snarfe", 1), ("frmph", 1), ("flooglebeam", 3)],
)
def test_unknown_words_fall_back_to_the_documented_heuristic(word, syllables):
    assert estimate(word) == syllables
    assert count_word(word) == (syllables, False)


def test_pattern_check_names_the_lines_that_are_off():
    result = count_syllables.invoke({"text": "Cherry blossoms drifting down\n\nsoft rain wakes the sleeping seeds", "pattern": [5, 7, 5]})
    assert result["matches_pattern"] is False and result["ok"] is False
    assert result["problems"] == ["2 lines, expected 3", "line 1: 7 syllables, expected 5"]


def test_estimated_hyphenated_curly_and_numeric_tokens():
    result = count_syllables.invoke({"text": "Blorptastic snow-capped peak\u2019s glow\nin 1999"})
    assert result["estimated_words"] == ["Blorptastic", "peak's"]
    assert result["lines"][0]["words"] == "Blorptastic=3 snow=1 capped=1 peak's=1 glow=1"
    assert result["skipped"] == ["1999"] and result["syllables"] == [7, 1]


def test_registered_through_the_entry_point(monkeypatch):
    from rubric_runner.plugins.manager import Plugins
    from rubric_runner.plugins.registry import ToolRegistry, bind_settings

    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "syllables")
    entry = ToolRegistry(Plugins()).find("count_syllables", "grader.tools.count_syllables")
    assert (entry.plugin, entry.package) == ("syllables", "rubric_runner_syllables")
    configured = bind_settings(entry.tool, {"pattern": [5, 7, 5]}, "grader.tools.count_syllables")
    assert configured.invoke({"text": HAIKU})["matches_pattern"] is True
    assert configured.invoke({"text": HAIKU})["ok"] is True


def test_ok_only_with_a_pattern():
    assert "ok" not in count_syllables.invoke({"text": HAIKU})
