"""text_stats: sentence and word counts, required terms and sections, for graders of prose."""

from __future__ import annotations

import re
from typing import Annotated

from langchain_core.tools import InjectedToolArg, tool
from pydantic import Field, StringConstraints

from .hookspecs import hookimpl

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
WORD = re.compile(r"[^\W_]+(?:(?:['\u2019-]|(?<=\d)[.,](?=\d))[^\W_]+)*")
ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
COLON_HEADING = re.compile(r"^\s*(?:\*\*)?([^.!?:]{1,80}?)(?:\*\*)?:(?:\*\*)?\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]\u201d]))\s+(?=[\"'(\[\u201c]?[A-Z0-9])")
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "dr.", "mr.", "mrs.", "ms.", "prof.", "st.", "fig.", "no.")
MAX_LISTED = 20


def headings(text: str) -> list[str]:
    """The text of every Markdown heading and every ``Title:`` line."""
    found = []
    for line in text.splitlines():
        match = ATX_HEADING.match(line) or COLON_HEADING.match(line)
        if match:
            found.append(match.group(1).strip())
    return found


def _blocks(text: str) -> list[str]:
    """Paragraphs and list items, headings left out: no sentence runs across one of these."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or ATX_HEADING.match(line) or COLON_HEADING.match(line) or LIST_ITEM.match(line):
            blocks.append(" ".join(current))
            current = [LIST_ITEM.sub("", line)] if LIST_ITEM.match(line) else []
        else:
            current.append(line.strip())
    blocks.append(" ".join(current))
    return [block for block in blocks if WORD.search(block)]


def sentences(text: str) -> list[str]:
    """The text split into sentences (see the package README for the rules)."""
    found = []
    for block in _blocks(text):
        pieces: list[str] = []
        for piece in SENTENCE_END.split(block):
            if pieces and pieces[-1].split()[-1].lower() in ABBREVIATIONS:
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
        found += [piece.strip() for piece in pieces if WORD.search(piece)]
    return found


def has_term(text: str, term: str) -> bool:
    """Whether ``term`` occurs as a whole word or phrase (case-insensitive, optional plural)."""
    words = [re.escape(word) for word in term.split()]
    return re.search(r"(?<!\w)" + r"\s+".join(words) + r"(?:e?s)?(?!\w)", text, re.IGNORECASE) is not None


@tool
def text_stats(
    text: str,
    required_terms: Annotated[
        list[NonEmpty] | None, InjectedToolArg, Field(description="terms the text must mention, e.g. [light, chlorophyll]")
    ] = None,
    required_sections: Annotated[
        list[NonEmpty] | None, InjectedToolArg, Field(description="section headings the text must have, e.g. [Summary]")
    ] = None,
) -> dict:
    """Count the sentences and words of a text and check its required terms and sections.

    Pass the complete text. Returns sentence_count, word_count, the sentences
    as split, and, when the rubric configures them, which required terms and
    sections are present and which are missing, and ok: none is missing.
    """
    found = sentences(text)
    result: dict = {"sentence_count": len(found), "word_count": len(WORD.findall(text))}
    if required_terms:
        present = {term: has_term(text, term) for term in required_terms}
        result.update(terms=present, missing_terms=[term for term, ok in present.items() if not ok])
    if required_sections:
        titles = headings(text)
        present = {name: any(name.lower() in title.lower() for title in titles) for name in required_sections}
        result.update(sections=titles, missing_sections=[name for name, ok in present.items() if not ok])
    if required_terms or required_sections:
        result["ok"] = not result.get("missing_terms") and not result.get("missing_sections")
    result["sentences"] = [s if len(s) <= 200 else s[:200] + "..." for s in found[:MAX_LISTED]]
    return result


@hookimpl
def register_tools(register):
    register(text_stats)
