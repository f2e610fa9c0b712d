"""Each run's verdict trail for report.html: its grading passes, the gaps of each, and how the answer
changed after each ``needs_revision``, as data the page renders when a trail is opened.

Every text is cut to a bound, so a run adds at most a bounded number of bytes to the page.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from ..records import RunRecord

TEXT_CHARS = 2000
"""The most characters of an explanation, gap, error or final answer a trail shows."""
CONTEXT_CHARS = 200
"""How much unchanged text a diff keeps at each end of a long unchanged stretch."""
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def _cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "\u2026"


def word_diff(before: str, after: str) -> list[list[str]]:
    """``[[op, text], ...]``, word by word: ``=`` kept (a long stretch cut to its ends), ``-`` removed, ``+`` added."""
    old, new = _TOKENS.findall(before), _TOKENS.findall(after)
    ops: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            kept = "".join(old[i1:i2])
            ops.append(["=", kept if len(kept) <= 2 * CONTEXT_CHARS else f"{kept[:CONTEXT_CHARS]} \u2026 {kept[-CONTEXT_CHARS:]}"])
            continue
        ops += [[op, text] for op, text in (("-", "".join(old[i1:i2])), ("+", "".join(new[j1:j2]))) if text]
    return ops


def trail(record: RunRecord) -> dict[str, Any]:
    """A run's trail: ``passes`` (verdict, explanation, criteria passed of total, failing criteria with
    their gaps, and the diff to the next attempt after a ``needs_revision``), ``error``, ``answer``."""
    passes = []
    attempts = record.attempts
    for number, evaluation in enumerate(record.evaluations):
        failing = [[c.name, _cut(c.gap)] for c in evaluation.criteria if not c.passed]
        revised = evaluation.result == "needs_revision" and number + 1 < len(attempts)
        passes.append({
            "result": evaluation.result,
            "explanation": _cut(evaluation.explanation),
            "passed": [len(evaluation.criteria) - len(failing), len(evaluation.criteria)],
            "failing": failing,
            "diff": word_diff(attempts[number], attempts[number + 1]) if revised else None,
        })
    error = record.error
    return {
        "passes": passes,
        "error": _cut(f"{error.type}: {error.message}") if error else "",
        "answer": _cut(record.final_answer),
        "run_dir": record.run_dir or "",
        "overrides": " ".join(record.overrides),
    }


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script type="application/json">`` element: no ``<``, ``>`` or
    ``&`` can end the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
