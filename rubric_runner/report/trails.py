"""Each run's verdict trail for report.html, as data the page draws when a trail is opened: its
grading passes with the gaps of each, and the worker's answer at each pass (the page shows how it
changed after each ``needs_revision``, a word diff it computes then).

Every text is cut to a bound (answers already are, in the record), so a run adds at most a bounded
number of bytes to the page.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from ..records import RunHeader, TaskRecord

TEXT_CHARS = 2000
"""The most characters of an explanation, gap, error or final answer a trail shows."""


def _cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "\u2026"


def trail(header: RunHeader, record: TaskRecord) -> dict[str, Any]:
    """A run's trail: ``passes`` (verdict, whether the library marked it unverified, explanation, criteria
    passed of total, failing criteria with their gaps, what the grader was shown when part of the transcript
    was left out), ``attempts`` (the answer each pass graded), ``error``, ``answer``, which attempt the
    loop's policy ``returned`` and why, where it ran."""
    passes = []
    for evaluation in record.evaluations:
        failing = [[c.name, _cut(c.gap)] for c in evaluation.criteria if not c.passed]
        passes.append({
            "result": evaluation.result,
            "unverified": evaluation.unverified,
            "view": evaluation.view.describe() if evaluation.view is not None and evaluation.view.is_cut else "",
            "explanation": _cut(evaluation.explanation),
            "passed": [len(evaluation.criteria) - len(failing), len(evaluation.criteria)],
            "failing": failing,
        })
    error = record.error
    return {
        "passes": passes,
        "attempts": record.attempts,
        "error": _cut(f"{error.type}: {error.message}") if error else "",
        "answer": _cut(record.final_answer),
        "returned": record.returned.why if record.returned else "",
        "run_dir": record.run_dir or "",
        "overrides": " ".join(header.sources.overrides),
    }


def script_json(data: Any) -> str:
    """Compact JSON (by pydantic-core: a report renders one per run) that is safe inside a
    ``<script type="application/json">`` element: no ``<``, ``>`` or ``&`` can end the element or open a comment."""
    text = to_json(data).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
