"""Hidden verification: ``verify`` tools run on the worker's first and final answers, never shown to a model.

A check is a registered tool with settings, as in ``grader.tools``. It takes the answer text as its one
argument the model would fill (``code`` for ``run_test_suite``, ``text`` for ``count_syllables``) and
passes when its result carries ``ok: true``. A result without a boolean ``ok``, a sandbox refusal, or a
tool that raises makes the check unverifiable: never a pass nor a fail. ``trajectory`` is no tool: its
rules run on the worker's tool calls (``rubric_runner/tasks/trajectory.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from ..config.schema import RubricConfig
from ..errors import UsageError
from ..plugins.registry import ToolRegistry, tool_settings, validate_settings
from ..records import CheckOutcome, CheckResult, Verification
from . import trajectory
from .sets import Task
from .trajectory import Call, Rules
from .workspace import Workspace

PROTECTED_CHECK = "protected_files"
"""The check a workspace attempt fails when it changed a protected file, whatever its tests say."""


@dataclass(frozen=True)
class Check:
    """One resolved ``verify`` tool: the tool, the argument the answer goes in, and its settings."""

    name: str
    tool: BaseTool
    argument: str
    settings: dict[str, Any]


def resolve_check(registry: ToolRegistry, name: str, settings: dict[str, Any], key: str, rubric: str | None = None) -> Check:
    """The check ``name`` with ``settings``, validated as ``grader.tools`` settings are; ``key`` names the config
    key, ``rubric`` the rubric."""
    tool = registry.find(name, key).tool
    settings = validate_settings(tool, settings, key, rubric)
    missing = [setting for setting, field in tool_settings(tool).items() if field.is_required() and setting not in settings]
    if missing:
        raise UsageError(f"{key}.{missing[0]}", "required setting is missing", f"set {key}.{missing[0]}")
    visible = list(cast(type[BaseModel], tool.tool_call_schema).model_fields)  # typed as any schema; a tool's is a model
    if len(visible) != 1:
        raise UsageError(key, f"tool {tool.name!r} takes {len(visible)} arguments from a model, not one",
                          "a verify tool takes the answer as its only argument (e.g. code or text)")
    return Check(name, tool, visible[0], settings)


def resolve_checks(registry: ToolRegistry, rubric: RubricConfig, tasks: list[Task]) -> dict[str, list[Check | Rules]]:
    """Each task's checks (task id -> checks), resolved and validated before any model call.

    The rubric's own settings are checked under their keys first (``rubric.verify.NAME``); a task's
    merged ones under the task's (``rubric.dataset[3].verify.NAME``) when it comes from a dataset.
    """
    for name, settings in rubric.verify.items():
        key = f"rubric.verify.{name}"
        if name == trajectory.NAME:
            trajectory.parse(settings, key)
        else:
            validate_settings(registry.find(name, key).tool, dict(settings or {}), key, rubric.name)
    checks: dict[str, list[Check | Rules]] = {}
    for task in tasks:
        prefix = f"rubric.dataset[{task.index}].verify" if rubric.dataset else "rubric.verify"
        checks[task.id] = [trajectory.for_task(settings, f"{prefix}.{name}", task.workspace) if name == trajectory.NAME
                           else resolve_check(registry, name, settings, f"{prefix}.{name}", rubric.name)
                           for name, settings in task.verify.items()]
    return checks


async def run_check(check: Check, answer: str | dict[str, str]) -> CheckResult:
    """One check on one answer; whatever goes wrong makes it unverifiable, never passed."""
    try:
        # no callbacks: the run's recorder must not see it (it is nobody's tool call)
        result = await check.tool.ainvoke({check.argument: answer, **check.settings}, config={"callbacks": []})
    except Exception as exc:  # a tool error or a sandbox refusal: the answer could not be checked
        return CheckResult(tool=check.name, outcome=CheckOutcome.UNVERIFIABLE, error=f"{type(exc).__name__}: {exc}")
    details = result if isinstance(result, dict) else {"result": repr(result)[:2000]}
    if details.get("refused"):  # the sandbox would not run the code: nothing was checked
        return CheckResult(tool=check.name, outcome=CheckOutcome.UNVERIFIABLE, details=details,
                           error=f"the sandbox refused to run the code: {details['refused']}")
    if not isinstance(details.get("ok"), bool):
        return CheckResult(tool=check.name, outcome=CheckOutcome.UNVERIFIABLE, details=details,
                           error=f"{check.name} returned no boolean 'ok' (are its settings enough to decide a pass?)")
    return CheckResult(tool=check.name, outcome=CheckOutcome.PASSED if details["ok"] else CheckOutcome.FAILED,
                       details=details)


async def verify(checks: list[Check | Rules], answer: str | dict[str, str] | None, tampered: list[str] | None = None,
                 calls: list[Call] | None = None, workspace: Workspace | None = None) -> Verification:
    """Every check on ``answer`` (a workspace task's: its files, path -> text), trajectory rules on ``calls``
    (the worker's up to it; ``workspace``: the task's): failed if any failed, else unverifiable if any was,
    else passed. ``tampered``: the protected files the attempt changed, which fail it."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Verification(outcome=CheckOutcome.UNVERIFIABLE, error="the worker gave no answer")
    results = [trajectory.check(check, calls or [], workspace) if isinstance(check, Rules) else await run_check(check, answer)
               for check in checks]
    if tampered:
        results.append(CheckResult(tool=PROTECTED_CHECK, outcome=CheckOutcome.FAILED, details={"tampered": tampered},
                                   error=f"the attempt changed protected files: {', '.join(tampered)}"))
    outcomes = {result.outcome for result in results}
    outcome = next(o for o in (CheckOutcome.FAILED, CheckOutcome.UNVERIFIABLE, CheckOutcome.PASSED) if o in outcomes)
    passed = None if outcome is CheckOutcome.UNVERIFIABLE else outcome is CheckOutcome.PASSED
    return Verification(outcome=outcome, passed=passed, checks=results)
