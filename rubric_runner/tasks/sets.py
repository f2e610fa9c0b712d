"""Task sets: the tasks one run grades, from a JSONL or YAML file or the rubric itself."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config.schema import Config
from ..errors import UsageError

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
SLICE = re.compile(r"^(-?\d*):(-?\d*)$")
BUILTIN_DATASETS = ("humaneval",)
"""Task sets named instead of a file: built from an installed package (see ``rubric_runner/tasks/humaneval.py``)."""


@dataclass(frozen=True)
class Task:
    """One task: the message for the worker, its rubric, tool settings of its own, and its hidden checks."""

    id: str
    message: str
    rubric: str
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    verify: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``verify`` tool -> settings: the rubric's, with the task's own merged over them."""
    index: int = 0
    """Its place in the dataset, which config keys name (``rubric.dataset[3]``)."""


def _read(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            try:
                items += [json.loads(line)] if line.strip() else []
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number}: {exc.msg} at column {exc.colno}") from None
        return items
    data = yaml.safe_load(text)
    return data.get("tasks") if isinstance(data, dict) else data


def _merged(rubric_verify: dict[str, Any], task_verify: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The task's checks: every tool of ``rubric.verify`` and of its own, its own settings winning."""
    names = dict.fromkeys([*rubric_verify, *task_verify])
    return {name: {**(rubric_verify.get(name) or {}), **task_verify.get(name, {})} for name in names}


def _select(tasks: list[Task], selection: list[str]) -> list[Task]:
    """The tasks ``rubric.tasks`` names (ids, ``start:stop`` slices), in the dataset's order."""
    if not selection:
        return tasks
    index = {task.id: number for number, task in enumerate(tasks)}
    chosen: set[int] = set()
    for item in selection:
        item = str(item)
        match = SLICE.match(item)
        if match:
            start, stop = (int(bound) if bound else None for bound in match.groups())
            chosen.update(range(len(tasks))[start:stop])
        elif item in index:
            chosen.add(index[item])
        else:
            example = ", ".join(task.id for task in tasks[:3])
            raise UsageError("rubric.tasks", f"no task {item!r} in the dataset",
                              f"give task ids (e.g. {example}) or start:stop slices, e.g. rubric.tasks=[0:10]")
    if not chosen:
        raise UsageError("rubric.tasks", f"[{', '.join(map(str, selection))}] selects none of the dataset's {len(tasks)} tasks",
                          "e.g. rubric.tasks=[0:10]")
    return [task for number, task in enumerate(tasks) if number in chosen]


def _items(dataset: str) -> list[Any]:
    """The raw task mappings of ``rubric.dataset``: a built-in set's, or a file's."""
    if dataset in BUILTIN_DATASETS:
        from .humaneval import humaneval_items

        return humaneval_items()
    path = Path(dataset)
    try:
        return _read(path)
    except FileNotFoundError:
        raise UsageError("rubric.dataset", f"no such file: {path}",
                          f"give a JSONL or YAML task file, or a built-in set: {', '.join(BUILTIN_DATASETS)}") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise UsageError("rubric.dataset", f"{path} is not valid: {str(exc).splitlines()[0]}", "fix the file") from None


def load_tasks(config: Config) -> list[Task]:
    """The run's tasks: those ``rubric.tasks`` selects of ``rubric.dataset``, or the rubric's own task."""
    rubric = config.rubric
    if not rubric.dataset:
        return [Task("task", rubric.task, rubric.text, verify=_merged(rubric.verify, {}))]
    items = _items(rubric.dataset)
    if not isinstance(items, list) or not items:
        raise UsageError("rubric.dataset", f"{rubric.dataset} holds no list of tasks", "one task per line (JSONL) or a YAML list")
    tasks, seen = [], set()
    for index, item in enumerate(items):
        key = f"rubric.dataset[{index}]"
        if not isinstance(item, dict):
            raise UsageError(key, "a task must be a mapping", "give id, task and optionally rubric and tools")
        task_id, message = str(item.get("id", "")), item.get("task")
        if not TASK_ID.match(task_id) or task_id in seen:
            raise UsageError(f"{key}.id", f"{task_id!r} is missing, repeated or not a safe name", "use letters, digits, _ . -")
        if not isinstance(message, str) or not message.strip():
            raise UsageError(f"{key}.task", "is missing or empty", "give the task message")
        text = item.get("rubric", rubric.text)
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"{key}.rubric", "must be non-empty text", "give the criteria, one per line")
        tools = item.get("tools") or {}
        if not isinstance(tools, dict) or not all(isinstance(v, dict) for v in tools.values()):
            raise UsageError(f"{key}.tools", "must map tool names to settings", "e.g. tools: {run_test_suite: {cases: [...]}}")
        unknown = sorted(set(tools) - set(config.grader.tools) - set(config.worker.tools))
        if unknown:
            raise UsageError(f"{key}.tools.{unknown[0]}", "is not a tool of this run", "add it to grader.tools or remove it")
        verify = item.get("verify") or {}
        if not isinstance(verify, dict) or not all(isinstance(v, dict) for v in verify.values()):
            raise UsageError(f"{key}.verify", "must map tool names to settings", "e.g. verify: {run_test_suite: {suite: hidden.yaml}}")
        seen.add(task_id)
        tasks.append(Task(task_id, message, text, tools, _merged(rubric.verify, verify), index))
    return _select(tasks, rubric.tasks)
