"""Each run's verdict trail for report.html, as data the page draws when a trail is opened: its
grading passes with the gaps of each, and the worker's answer at each pass (the page shows how it
changed after each ``needs_revision``, a word diff it computes then).

Every text is cut to a bound (answers already are, in the record), so a run adds at most a bounded
number of bytes to the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_core import to_json

from ..records import RunHeader, TaskRecord

TEXT_CHARS = 2000
"""The most characters of an explanation, gap, error or final answer a trail shows."""
DIFF_CHARS = 4000
"""The most characters of an attempt's workspace diff a report shows."""


def _cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "\u2026"


def trail(header: RunHeader, record: TaskRecord, diffs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A run's trail: ``passes`` (verdict, whether the library marked it unverified, explanation, criteria
    passed of total, failing criteria with their gaps, what the grader was shown when part of the transcript
    was left out), ``attempts`` (the answer each pass graded), ``error``, ``answer``, which attempt the
    loop's policy ``returned`` and why, where it ran, a workspace task's ``workspaces`` (``diffs``, else
    read here: ``workspace_diffs``), and the hidden checks each attempt (``checks``) and the final answer
    (``final_checks``) failed, one line each."""
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
    final = record.verification.final if record.verification else None
    return {
        "passes": passes,
        "attempts": record.attempts,
        "error": _cut(f"{error.type}: {error.message}") if error else "",
        "answer": _cut(record.final_answer),
        "returned": record.returned.why if record.returned else "",
        "workspaces": workspace_diffs(record) if diffs is None else diffs,
        "checks": [[_cut(line) for line in a.verification.failures()] if a.verification else [] for a in record.verified_attempts],
        "final_checks": [_cut(line) for line in final.failures()] if final else [],
        "run_dir": record.run_dir or "",
        "overrides": " ".join(header.sources.overrides),
    }


def workspace_diffs(record: TaskRecord) -> list[dict[str, Any]]:
    """Each attempt's workspace (then the final one): which, the paths changed and tampered with, and its diff
    as kept (cut to ``DIFF_CHARS``; a kept diff already cut says so)."""
    shown = []
    for kept in [*record.workspaces, *([record.final_workspace] if record.final_workspace else [])]:
        try:
            text = (Path(record.run_dir or ".") / kept.diff).read_text(encoding="utf-8")
        except OSError:
            text = ""
        cut = kept.diff_cut or len(text) > DIFF_CHARS
        shown.append({"attempt": f"attempt {kept.attempt}" if kept.attempt else "final", "changed": kept.changed,
                      "tampered": kept.tampered, "diff": _cut(text, DIFF_CHARS) + ("\n[diff cut]" if cut else "")})
    return shown


def script_json(data: Any) -> str:
    """Compact JSON (by pydantic-core: a report renders one per run) that is safe inside a
    ``<script type="application/json">`` element: no ``<``, ``>`` or ``&`` can end the element or open a comment."""
    text = to_json(data).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
