"""Built-in evidence tools, registered through the same hook as any plugin's (``plugins.builtin``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from langchain_core.tools import InjectedToolArg, tool
from pydantic import AfterValidator, Field, FilePath, PositiveFloat, PositiveInt

from ..sandbox import Limits, pytest_path, run_cases, run_pytest

TIMING = ("duration_s",)
"""What a sandbox result says that differs from run to run: kept from the model, so the same code gets the
same answer (the tool call's time is in events.jsonl)."""
FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
CASE_TABLE_SUFFIXES = (".yaml", ".yml")


def steady(result: dict[str, Any]) -> dict[str, Any]:
    """A sandbox result as the model gets it: without its ``TIMING``."""
    return {key: value for key, value in result.items() if key not in TIMING}


def strip_fences(code: str) -> str:
    """The code inside the first Markdown code fence, or ``code`` unchanged."""
    match = FENCE.search(code)
    return match.group(1) if match else code


CASE_KEYS = ("name", "args", "kwargs", "expected")


def check_cases(data: Any, source: str) -> tuple[str, list[dict[str, Any]]]:
    """A case table: ``function:`` and ``cases:`` of ``{name, args, kwargs, expected}``."""
    if not isinstance(data, dict) or not isinstance(data.get("function"), str):
        raise ValueError(f"{source}: a suite needs 'function: <name>'")
    return data["function"], checked_cases(data.get("cases"), source)


def checked_cases(cases: Any, source: str) -> list[dict[str, Any]]:
    """``cases`` if each is ``{name, args, kwargs, expected}`` with a name, an expected value, ``args`` a list
    and ``kwargs`` a mapping; else a ``ValueError`` naming the case and its key."""
    if not isinstance(cases, list):
        raise ValueError(f"{source}: 'cases' must be a list of {{name, args, kwargs, expected}}")
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise ValueError(f"{source}: case {index + 1} must be a mapping with a name, e.g. {{name: test_basic, args: [...], expected: ...}}")
        where = f"{source}: case {case['name']!r}"
        unknown = sorted(set(case) - set(CASE_KEYS))
        if unknown:
            raise ValueError(f"{where} has a key {unknown[0]!r} a case does not take (its keys: {', '.join(CASE_KEYS)})")
        if "expected" not in case:
            raise ValueError(f"{where} has no 'expected', the value the function must return")
        if not isinstance(case.get("args", []), list | tuple):
            raise ValueError(f"{where}: 'args' must be a list of the arguments, got {case['args']!r}; for one argument: [{case['args']!r}]")
        if not isinstance(case.get("kwargs", {}), dict):
            raise ValueError(f"{where}: 'kwargs' must be a mapping of argument names to values, got {case['kwargs']!r}")
    return cases


def load_suite(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """Read a case table from a YAML file."""
    return check_cases(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))


def check_suite(path: Path) -> Path:
    """A suite is a YAML case table (checked here) or a pytest ``.py`` file (pytest must be installed)."""
    if path.suffix in CASE_TABLE_SUFFIXES:
        load_suite(path)
    elif path.suffix != ".py":
        raise ValueError(f"{path.name}: a suite is a .yaml case table or a pytest .py file")
    elif pytest_path() is None:
        raise ValueError("a pytest file suite needs pytest installed (pip install pytest)")
    return path


@tool
def run_test_suite(
    code: str,
    suite: Annotated[
        FilePath | None,
        AfterValidator(lambda path: path and check_suite(path)),  # None passes: inline cases instead
        InjectedToolArg,
        Field(description="a YAML case table (function + cases) or a pytest .py file that imports the candidate"),
    ] = None,
    function: Annotated[str | None, InjectedToolArg, Field(description="with cases: the function the cases call")] = None,
    cases: Annotated[
        list[dict[str, Any]] | None,
        AfterValidator(lambda cases: cases and checked_cases(cases, "inline cases")),  # None passes: a suite instead
        InjectedToolArg,
        Field(description="inline case table, instead of a suite file: [{name, args, kwargs, expected}]"),
    ] = None,
    module: Annotated[
        str,
        InjectedToolArg,
        Field(pattern=r"^[A-Za-z_]\w*$", description="module name the pytest file imports the candidate code as"),
    ] = "solution",
    wall_seconds: Annotated[PositiveFloat, InjectedToolArg, Field(description="wall-clock limit")] = 10.0,
    cpu_seconds: Annotated[PositiveInt, InjectedToolArg, Field(description="CPU time limit")] = 5,
    memory_mb: Annotated[PositiveInt, InjectedToolArg, Field(description="address-space limit in MiB")] = 512,
) -> dict:
    """Run the task's test suite against Python source code in a sandbox.

    Pass the complete source of the candidate code. Returns ok, the passed
    tests, one failure message per failing test, whether the code timed out
    or was killed and why, and the tail of its output.
    """
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, memory_mb=memory_mb)
    source = strip_fences(code)
    if cases is not None:
        return steady(run_cases(source, *check_cases({"function": function, "cases": cases}, "inline cases"), limits))
    if suite is None:
        return {"ok": False, "passed": [], "failures": ["run_test_suite has neither a suite nor cases configured"]}
    suite = Path(suite)
    if suite.suffix == ".py":
        if suite.stem == module:
            raise ValueError(f"the pytest file {suite.name} cannot share its name with the module {module!r}")
        return steady(run_pytest(source, module, suite.name, suite.read_text(encoding="utf-8"), limits))
    function, cases = load_suite(suite)
    return steady(run_cases(source, function, cases, limits))


CHECK_RUNNER = "_rubric_runner_check"
"""The function ``run_check`` appends to the program: calls ``check(entry_point)`` and returns True."""


@tool
def run_check(
    code: str,
    test: Annotated[str, InjectedToolArg, Field(description="source defining check(candidate), which asserts")],
    entry_point: Annotated[
        str, InjectedToolArg, Field(pattern=r"^[A-Za-z_]\w*$", description="the function check is called with")
    ],
    prelude: Annotated[str, InjectedToolArg, Field(description="source run before the candidate code")] = "",
    wall_seconds: Annotated[PositiveFloat, InjectedToolArg, Field(description="wall-clock limit")] = 10.0,
    cpu_seconds: Annotated[PositiveInt, InjectedToolArg, Field(description="CPU time limit")] = 5,
    memory_mb: Annotated[PositiveInt, InjectedToolArg, Field(description="address-space limit in MiB")] = 512,
) -> dict:
    """Run a test program's check(candidate) against Python source code in a sandbox (HumanEval's format).

    The program is the prelude, the candidate code, the test source, and a
    call of check(entry_point). Returns ok and the failure, as run_test_suite does.
    """
    program = "\n\n".join(
        [prelude, strip_fences(code), test, f"def {CHECK_RUNNER}():\n    check({entry_point})\n    return True\n"]
    )
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, memory_mb=memory_mb)
    return steady(run_cases(program, CHECK_RUNNER, [{"name": "check", "args": [], "expected": True}], limits))
