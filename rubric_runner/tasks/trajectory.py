"""Trajectory checks: hidden rules over the worker's tool calls (``verify: {trajectory: {...}}``).

The calls an attempt's check sees are the worker's tool calls of the turn (its AI messages' ``tool_calls``;
a subagent's work is one ``task`` call) up to that attempt's answer; the final answer's sees them all.

- ``called: [TOOL, ...]``: each tool was called.
- ``called_after_last_edit: [TOOL, ...]``: each was called after the last ``write_file`` / ``edit_file``
  call (anywhere, with none), before the answer: e.g. the tests ran on the final files.
- ``max_calls: {TOOL: N, "*": N}``: at most N calls of the tool; ``"*"``: of all tools together.
- ``never_wrote_protected: true``: no ``write_file`` / ``edit_file`` on a path a protected glob of the
  task's workspace matches.
- ``never_ran: [REGEX, ...]``: no call's ``command`` argument (``execute``'s, ``run_tests``' when given)
  matches one (``re.search``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from ..compat.deepagents import GRADER_SOURCE
from ..errors import UsageError
from ..records import CheckOutcome, CheckResult
from .workspace import Workspace

NAME = "trajectory"
"""The check's name in ``verify``: no registered tool, its rules run on the calls."""
EDITS = ("write_file", "edit_file")
"""The calls that change the worker's files."""
ALL = "*"
"""``max_calls``'s key for the calls of every tool together."""
RULES = ("called", "called_after_last_edit", "max_calls", "never_wrote_protected", "never_ran")
SHOWN_CHARS = 200
"""The most characters of an offending call's argument its details keep."""
SHOWN_CALLS = 20
"""The most offending calls one rule's details list."""
EXAMPLE = "e.g. trajectory: {called_after_last_edit: [run_tests], max_calls: {'*': 40}, never_ran: ['rm -rf']}"


@dataclass(frozen=True)
class Call:
    """One tool call of the worker: its place among the turn's calls (from 1), its tool and arguments."""

    number: int
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Rules:
    """A task's trajectory rules, validated."""

    called: tuple[str, ...] = ()
    called_after_last_edit: tuple[str, ...] = ()
    max_calls: tuple[tuple[str, int], ...] = ()
    never_wrote_protected: bool = False
    never_ran: tuple[re.Pattern[str], ...] = ()


def _names(value: Any, key: str, what: str) -> tuple[str, ...]:
    """A list of non-empty strings (one string is a list of one)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, str) or not all(isinstance(i, str) and i for i in items):
        raise UsageError(key, f"must be a list of {what}, got {value!r}", EXAMPLE)
    return tuple(items)


def parse(settings: Any, key: str) -> Rules:
    """``settings`` as rules, or a ``UsageError`` naming the key at fault."""
    if not isinstance(settings, Mapping) or not settings:
        raise UsageError(key, f"must map rules to their settings, got {settings!r}", EXAMPLE)
    unknown = [name for name in settings if name not in RULES]
    if unknown:
        raise UsageError(f"{key}.{unknown[0]}", "is not a trajectory rule", f"rules: {', '.join(RULES)}")
    limits = settings.get("max_calls") or {}
    if not isinstance(limits, Mapping):
        raise UsageError(f"{key}.max_calls", f"must map tools to their most calls, got {limits!r}", "e.g. max_calls: {execute: 5, '*': 40}")
    for tool, limit in limits.items():
        if not isinstance(tool, str) or not tool or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise UsageError(f"{key}.max_calls.{tool}", f"must be a count of calls (0 or more), got {limit!r}", "e.g. max_calls: {execute: 5}")
    protected = settings.get("never_wrote_protected", False)
    if not isinstance(protected, bool):
        raise UsageError(f"{key}.never_wrote_protected", f"must be true or false, got {protected!r}", "e.g. never_wrote_protected: true")
    patterns = []
    for index, pattern in enumerate(_names(settings.get("never_ran", ()), f"{key}.never_ran", "regexes")):
        try:
            patterns.append(re.compile(pattern))
        except re.error as exc:
            raise UsageError(f"{key}.never_ran[{index}]", f"{pattern!r} is not a regex: {exc}", "fix the pattern (Python re syntax)") from None
    return Rules(called=_names(settings.get("called", ()), f"{key}.called", "tool names"),
                 called_after_last_edit=_names(settings.get("called_after_last_edit", ()), f"{key}.called_after_last_edit", "tool names"),
                 max_calls=tuple(limits.items()), never_wrote_protected=protected, never_ran=tuple(patterns))


def for_task(settings: Any, key: str, workspace: Workspace | None) -> Rules:
    """A task's rules (``parse``); ``never_wrote_protected`` needs its workspace's protected globs."""
    rules = parse(settings, key)
    if rules.never_wrote_protected and (workspace is None or not workspace.protected):
        raise UsageError(f"{key}.never_wrote_protected", "the task has no protected files",
                         "give the task a workspace with protected globs, or drop the rule")
    return rules


def worker_calls(messages: Sequence[Any], until: Any = None) -> list[Call]:
    """The worker's tool calls of the turn (since the latest user message) up to the message ``until``
    (one of ``messages``), or all of them."""
    asked = [index for index, message in enumerate(messages)
             if isinstance(message, HumanMessage) and message.name != GRADER_SOURCE]
    calls: list[Call] = []
    for message in messages[asked[-1] + 1 if asked else 0:]:
        if message is until:
            break
        if isinstance(message, AIMessage):
            calls.extend(Call(len(calls) + 1, call["name"], call.get("args") or {}) for call in message.tool_calls)
    return calls


def _path(call: Call) -> str:
    path = call.args.get("file_path", call.args.get("path"))
    return path if isinstance(path, str) else ""


def _shown(call: Call, argument: str = "") -> dict[str, Any]:
    """An offending call as its details list it."""
    shown: dict[str, Any] = {"call": call.number, "tool": call.name}
    if argument:
        shown["argument"] = argument if len(argument) <= SHOWN_CHARS else argument[:SHOWN_CHARS] + "\u2026"
    return shown


def _verdict(rule: str, failure: str | None, offending: list[Call] | None = None, argument: Any = None) -> dict[str, Any]:
    """One rule's verdict: ``rule``, ``passed``, and when failed why (``failure``) and the calls at fault."""
    verdict: dict[str, Any] = {"rule": rule, "passed": failure is None}
    if failure is not None:
        verdict["failure"] = failure
        verdict["calls"] = [_shown(call, argument(call) if argument else "") for call in (offending or [])[:SHOWN_CALLS]]
    return verdict


def check(rules: Rules, calls: Sequence[Call], workspace: Workspace | None) -> CheckResult:
    """The rules on ``calls``: passed when every rule holds, else failed, its ``error`` naming each rule
    that failed in one line; ``details`` holds every rule's verdict."""
    verdicts = []
    for tool in rules.called:
        verdicts.append(_verdict(f"called.{tool}", None if any(call.name == tool for call in calls) else f"{tool} was never called"))
    edits = [call for call in calls if call.name in EDITS]
    for tool in rules.called_after_last_edit:
        after = [call for call in calls if call.name == tool and (not edits or call.number > edits[-1].number)]
        failure = None
        if not after:
            failure = f"{tool} was not called after the last file change (call {edits[-1].number}, {edits[-1].name} {_path(edits[-1])})" \
                if edits else f"{tool} was never called"
        verdicts.append(_verdict(f"called_after_last_edit.{tool}", failure, edits[-1:], _path))
    for tool, limit in rules.max_calls:
        made = list(calls) if tool == ALL else [call for call in calls if call.name == tool]
        noun = "call" if len(made) == 1 else "calls"
        what = f"tool {noun}" if tool == ALL else f"{noun} of {tool}"
        verdicts.append(_verdict(f"max_calls.{tool}", f"{len(made)} {what}, at most {limit}" if len(made) > limit else None, made[limit:]))
    if rules.never_wrote_protected and workspace is not None:
        wrote = [call for call in edits if workspace.is_protected(_path(call))]
        paths = ", ".join(dict.fromkeys(_path(call) for call in wrote))
        verdicts.append(_verdict("never_wrote_protected", f"wrote protected files: {paths}" if wrote else None, wrote, _path))
    for pattern in rules.never_ran:
        ran = [call for call in calls if isinstance(call.args.get("command"), str) and pattern.search(call.args["command"])]
        failure = f"ran a command matching {pattern.pattern!r} (call {ran[0].number}, {ran[0].name})" if ran else None
        verdicts.append(_verdict(f"never_ran[{pattern.pattern}]", failure, ran, lambda call: call.args["command"]))
    failed = [f"{verdict['rule']}: {verdict['failure']}" for verdict in verdicts if not verdict["passed"]]
    details = {"ok": not failed, "calls": len(calls), "rules": verdicts}
    if not failed:
        return CheckResult(tool=NAME, outcome=CheckOutcome.PASSED, details=details)
    return CheckResult(tool=NAME, outcome=CheckOutcome.FAILED, details=details, error="; ".join(failed))
