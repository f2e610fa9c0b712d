"""What a verdict must rest on, and how far its criteria cover the rubric.

A verdict is checked twice. Its evidence, while its pass runs: a ``satisfied`` verdict rests on the
tools the rubric requires (``rubric.evidence``, and any tool a rubric line names), a passed criterion
on the tools its name mentions; a tool counts as called when a tool call of the pass was answered
without an error and without a refusal (a sandbox that would not run the code checked nothing). Its
coverage, when it is recorded: criteria fewer than the rubric's lines, or ones that match none of
them, are flagged.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from ..compat.deepagents import GRADER_TOOL
from ..records import Evaluation, Status

EVIDENCE_SOURCE = "rubric_runner_evidence_check"
"""``lc_source`` of the message that sends a verdict back for missing evidence (its ``missing`` tools)."""


_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
_WORD = re.compile(r"[a-z0-9_]+")


@functools.lru_cache(maxsize=256)
def rubric_lines(text: str) -> tuple[str, ...]:
    """The rubric's criteria: its non-empty lines without list markers (a run's tasks share a few rubrics: kept)."""
    return tuple(line for line in (_LIST_MARKER.sub("", raw).strip() for raw in text.splitlines()) if line)


def tools_named(text: str, tools: list[str]) -> set[str]:
    """The tools whose names appear in ``text`` as words."""
    return {name for name in tools if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)}


def _refused(message: ToolMessage) -> bool:
    """Whether a tool's answer says it checked nothing (a sandbox that refused to run the code)."""
    try:
        data = json.loads(message.content) if isinstance(message.content, str) else None
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("refused"))


class EvidenceRule:
    """The tools a verdict must rest on: those the rubric requires, and those its criteria name."""

    def __init__(self, tools: list[str], required: list[str]) -> None:
        self.tools = sorted({*tools, *required})
        self.required = required

    def missing(self, verdict: Any, rubric_text: str, messages: list[Any]) -> list[str]:
        """The tools ``verdict`` rests on that no tool call among ``messages`` answered with evidence."""
        needed: set[str] = set()
        if verdict.result == "satisfied":
            needed |= set(self.required) | tools_named(rubric_text, self.tools)
        for criterion in verdict.criteria:
            if criterion["passed"]:
                needed |= tools_named(criterion["name"], self.tools)
        called = {m.name for m in messages if isinstance(m, ToolMessage) and m.status != "error" and not _refused(m)}
        return sorted(needed - called)


def sent_back(result: list[Any], missing: list[str]) -> list[Any]:
    """A verdict's messages answered with why it is not taken: its ``GraderResponse`` tool message
    rewritten, or (a verdict given as text) a message added."""
    names = ", ".join(missing)
    reason = (f"Verdict not accepted: it rests on {names}, which gave no evidence in this grading pass (never "
              f"called, or its call was refused). Call {names} to get the evidence, then return your GraderResponse again.")
    marker = {"lc_source": EVIDENCE_SOURCE, "missing": missing}
    out = [
        ToolMessage(reason, tool_call_id=m.tool_call_id, name=GRADER_TOOL, status="error", additional_kwargs=marker)
        if isinstance(m, ToolMessage) and m.name == GRADER_TOOL else m
        for m in result
    ]
    if not any(isinstance(m, ToolMessage) and m.name == GRADER_TOOL for m in result):
        out.append(HumanMessage(reason, additional_kwargs=marker))
    return out


def was_sent_back(messages: list[Any]) -> bool:
    """Whether a verdict of this pass was sent back already."""
    return any(m.additional_kwargs.get("lc_source") == EVIDENCE_SOURCE for m in messages)


def coverage(rubric_text: str, criteria: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How a verdict's criteria miss the rubric's lines: fewer of them, lines no criterion matches, or
    criteria that match no line (by shared words); None when they cover the rubric."""
    lines = rubric_lines(rubric_text)
    names = [str(criterion.get("name", "")) for criterion in criteria]
    words = {text: _words(text) for text in (*lines, *names)}
    uncovered = [line for line in lines if not any(_same(words[line], words[name]) for name in names)]
    other = [name for name in names if not any(_same(words[line], words[name]) for line in lines)]
    if len(names) >= len(lines) and not uncovered and not other:
        return None
    return {"lines": len(lines), "criteria": len(names), "uncovered": uncovered, "other": other}


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """A rubric line's or criterion name's words (the same ones come back in every pass: kept)."""
    return frozenset(word for word in _WORD.findall(text.lower()) if len(word) > 2 or word.isdigit())


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether a criterion name says what a rubric line says (their words): half the words of the shorter
    one are shared."""
    return bool(a and b) and len(a & b) * 2 >= min(len(a), len(b))


def final_status(status: Status, evaluations: list[Evaluation], strict_coverage: bool, fail_cut_view: bool = False) -> Status:
    """A ``satisfied`` run whose last verdict is unsupported, or (``grader.strict_coverage``) does not
    cover the rubric, ends ``unsupported``; so does (``grader.on_cut_view=fail``) one whose last verdict's
    failing criteria rest on a cut view."""
    last = evaluations[-1] if evaluations else None
    if status is Status.SATISFIED and last is not None and (last.unsupported or (strict_coverage and last.coverage)):
        return Status.UNSUPPORTED
    if fail_cut_view and status.terminal and last is not None and last.cut_view:
        return Status.UNSUPPORTED
    return status
