"""Task sets: the tasks one run grades, from a JSONL or YAML file or the rubric itself."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config import Config, ConfigError

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


@dataclass(frozen=True)
class Task:
    """One task: the message for the worker, its rubric, and tool settings of its own."""

    id: str
    message: str
    rubric: str
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)


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


def load_tasks(config: Config) -> list[Task]:
    """The run's tasks: each line of ``rubric.dataset``, or the rubric's own task."""
    rubric = config.rubric
    if not rubric.dataset:
        return [Task("task", rubric.task, rubric.text)]
    path = Path(rubric.dataset)
    try:
        items = _read(path)
    except FileNotFoundError:
        raise ConfigError("rubric.dataset", f"no such file: {path}", "give a JSONL or YAML task file") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError("rubric.dataset", f"{path} is not valid: {str(exc).splitlines()[0]}", "fix the file") from None
    if not isinstance(items, list) or not items:
        raise ConfigError("rubric.dataset", f"{path} holds no list of tasks", "one task per line (JSONL) or a YAML list")
    tasks, seen = [], set()
    for index, item in enumerate(items):
        key = f"rubric.dataset[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(key, "a task must be a mapping", "give id, task and optionally rubric and tools")
        task_id, message = str(item.get("id", "")), item.get("task")
        if not TASK_ID.match(task_id) or task_id in seen:
            raise ConfigError(f"{key}.id", f"{task_id!r} is missing, repeated or not a safe name", "use letters, digits, _ . -")
        if not isinstance(message, str) or not message.strip():
            raise ConfigError(f"{key}.task", "is missing or empty", "give the task message")
        text = item.get("rubric", rubric.text)
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{key}.rubric", "must be non-empty text", "give the criteria, one per line")
        tools = item.get("tools") or {}
        if not isinstance(tools, dict) or not all(isinstance(v, dict) for v in tools.values()):
            raise ConfigError(f"{key}.tools", "must map tool names to settings", "e.g. tools: {run_test_suite: {cases: [...]}}")
        unknown = sorted(set(tools) - set(config.grader.tools) - set(config.worker.tools))
        if unknown:
            raise ConfigError(f"{key}.tools.{unknown[0]}", "is not a tool of this run", "add it to grader.tools or remove it")
        seen.add(task_id)
        tasks.append(Task(task_id, message, text, tools))
    return tasks
