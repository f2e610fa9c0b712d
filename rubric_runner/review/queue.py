"""What the review page shows of a run: each transcript's record, in the order a person should label them."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.judge import VERDICTS
from ..records import TRANSCRIPT_FILE, TaskRecord, read_task_at, record_dirs
from .labels import PersonLabel


@dataclass
class Item:
    """One transcript to label: its record dir (``key``, relative to the run dir) and what the page shows."""

    key: str
    record: TaskRecord
    messages: list[dict[str, Any]]
    """The transcript's messages: ``type`` (human, ai, tool, system), ``content``, ``tool_calls``, ``name``."""

    @property
    def verdict(self) -> bool | None:
        """The grader's: satisfied (True), rejected (False), or none."""
        return VERDICTS.get(self.record.status)

    @property
    def checked(self) -> bool | None:
        """The final answer's hidden checks: passed, failed, or not checked."""
        return self.record.verified("final")

    @property
    def criteria(self) -> list[str]:
        """The criteria the grader graded, in its last pass that graded any; else the rubric's lines."""
        graded = [e for e in self.record.evaluations if e.criteria]
        if graded:
            return [c.name.strip() for c in graded[-1].criteria]
        lines = (line.strip() for line in (self.record.rubric or "").splitlines())
        return [line.lstrip("-*").strip() for line in lines if line.startswith(("-", "*")) and line.lstrip("-*").strip()]

    def revisions(self) -> list[dict[str, Any]]:
        """Each answer after the first, as a unified diff from the one before."""
        answers = [a for a in self.record.attempts if a] or [a for a in (self.record.first_answer, self.record.final_answer) if a]
        found = []
        for number, (before, after) in enumerate(zip(answers, answers[1:]), start=2):
            diff = difflib.unified_diff(before.splitlines(), after.splitlines(), f"answer {number - 1}", f"answer {number}", lineterm="")
            found.append({"number": number, "diff": list(diff)})
        return found


def _messages(record_dir: Path) -> list[dict[str, Any]]:
    try:
        raw = json.loads((record_dir / TRANSCRIPT_FILE).read_text(encoding="utf-8")).get("messages", [])
    except (OSError, ValueError):
        return []
    found = []
    for message in raw:
        data = message.get("data", {}) if isinstance(message, dict) else {}
        content = data.get("content", "")
        if isinstance(content, list):  # content blocks: their text
            content = "\n".join(str(block.get("text", block)) if isinstance(block, dict) else str(block) for block in content)
        calls = [{"name": c.get("name"), "args": json.dumps(c.get("args", {}), indent=1, ensure_ascii=False)}
                 for c in data.get("tool_calls") or []]
        found.append({"type": message.get("type", "?"), "content": str(content), "tool_calls": calls, "name": data.get("name")})
    return found


def items(run_dir: Path) -> list[Item]:
    """Every transcript of the run in ``run_dir`` that has a record, in record-dir order."""
    found = []
    for record_dir in record_dirs(Path(run_dir)):
        record = read_task_at(record_dir) if (record_dir / TRANSCRIPT_FILE).is_file() else None
        if record is not None:
            found.append(Item(record_dir.relative_to(run_dir).as_posix(), record, _messages(record_dir)))
    return found


def disagreement(item: Item, label: PersonLabel | None) -> int:
    """How many pairs of the grader's verdict, the hidden checks and the label disagree (0 to 3)."""
    said = [v for v in (item.verdict, item.checked, label.satisfied if label else None) if v is not None]
    return sum(a != b for i, a in enumerate(said) for b in said[i + 1:])


def queue(found: list[Item], labels: dict[str, PersonLabel]) -> list[Item]:
    """The items in labelling order: where the grader, the hidden checks and earlier labels disagree first
    (most disagreement first), then the unlabelled ones, then the rest; otherwise in record-dir order."""
    return sorted(found, key=lambda item: (-disagreement(item, labels.get(item.key)), item.key in labels))
