"""Built-in evidence tools, registered through the same hook as any plugin's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from langchain_core.tools import InjectedToolArg, tool
from pydantic import FilePath, PositiveFloat, PositiveInt

from .hookspecs import hookimpl
from .sandbox import Limits, run_cases

FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def strip_fences(code: str) -> str:
    """The code inside the first Markdown code fence, or ``code`` unchanged."""
    match = FENCE.search(code)
    return match.group(1) if match else code


def check_suite(data: Any, source: str) -> tuple[str, list[dict[str, Any]]]:
    """A case table: ``function:`` and ``cases:`` of ``{name, args, kwargs, expected}``."""
    if not isinstance(data, dict) or not isinstance(data.get("function"), str):
        raise ValueError(f"{source}: a suite needs 'function: <name>'")
    cases = data.get("cases")
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "name" in c and "expected" in c for c in cases):
        raise ValueError(f"{source}: 'cases' must be a list of mappings with name and expected")
    return data["function"], cases


def load_suite(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """Read a case table from a YAML file."""
    return check_suite(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))


@tool
def run_test_suite(
    code: str,
    suite: Annotated[FilePath | None, InjectedToolArg] = None,
    function: Annotated[str | None, InjectedToolArg] = None,
    cases: Annotated[list[dict[str, Any]] | None, InjectedToolArg] = None,
    wall_seconds: Annotated[PositiveFloat, InjectedToolArg] = 10.0,
    cpu_seconds: Annotated[PositiveInt, InjectedToolArg] = 5,
    memory_mb: Annotated[PositiveInt, InjectedToolArg] = 512,
) -> dict:
    """Run the task's test suite against Python source code in a sandbox.

    Pass the complete source of the candidate code. Returns ok, the passed
    tests, one failure message per failing test, and whether the code timed
    out or was killed.
    """
    if cases is not None:
        function, cases = check_suite({"function": function, "cases": cases}, "inline cases")
    elif suite is not None:
        function, cases = load_suite(Path(suite))
    else:
        return {"ok": False, "passed": [], "failures": ["run_test_suite has no suite or cases configured"]}
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, memory_mb=memory_mb)
    return run_cases(strip_fences(code), function, cases, limits)


@hookimpl
def register_tools(register):
    register(run_test_suite)
