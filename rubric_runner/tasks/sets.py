"""Task sets: the tasks one run grades, from a task file or dataset (``tasks.formats``) or the rubric itself.

A row's fields are read from the columns of their names, or of the names ``rubric.fields`` maps them
to (``{task: input, id: sample_id}``). A row without an id column is named by its place (``0``, ``1``,
...); a ``target`` fills ``{target}`` in the rubric, or becomes its last criterion; ``metadata`` fills
``{metadata.KEY}``. In a CSV file, a mapping cell (``tools``, ``verify``, ``metadata``) holds JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.schema import Config
from ..errors import UsageError
from ..records.layout import MESSAGE_TASK
from .formats import Row, read_rows
from .workspace import Workspace, load_workspace

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
SLICE = re.compile(r"^(-?\d*):(-?\d*)$")
WORKSPACE_CHECK = "workspace_tests"
"""The hidden check of a workspace task, whose ``tests`` dir a dataset row names relative to the dataset file."""
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
    workspace: Workspace | None = field(default=None, hash=False)
    """The files its worker starts from, and those it must not change; None for a task of one message."""
    named: bool = True
    """Whether its id is its own (a dataset row's); the rubric's own task has none, and is known by its message."""


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


FIELDS = ("id", "task", "rubric", "target", "metadata", "tools", "verify", "workspace", "protected")
"""A task's fields, each read from the dataset's column of that name unless ``rubric.fields`` maps it to another."""


def _columns(fields: dict[str, str]) -> dict[str, str]:
    """Each task field's column: ``rubric.fields``'s mapping over the fields' own names."""
    for name, column in fields.items():
        if name not in FIELDS:
            raise UsageError(f"rubric.fields.{name}", "is not a task field", f"map one of {', '.join(FIELDS)} to a column")
        if not isinstance(column, str) or not column:
            raise UsageError(f"rubric.fields.{name}", "must name a column", f"e.g. +rubric.fields.{name}=input")
    return {name: fields.get(name, name) for name in FIELDS}


def _rows(dataset: str) -> list[Row]:
    """The raw rows of ``rubric.dataset``: a built-in set's, or a file's or saved dataset's."""
    if dataset in BUILTIN_DATASETS:
        from .humaneval import humaneval_items

        return [Row(item, f"{dataset} row {number}") for number, item in enumerate(humaneval_items())]
    return read_rows(dataset)


def _mapping(value: Any, key: str, where: str, example: str) -> dict[str, Any]:
    """A mapping cell (a CSV cell holds it as JSON text); empty is none."""
    if isinstance(value, str) and value.strip():
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(key, f"{where}: is not JSON ({exc.msg} at column {exc.colno})", f"e.g. {example}") from None
    return value or {}


def _filled(text: str, target: Any, metadata: dict[str, Any]) -> str:
    """The rubric with the row's ``{target}`` and ``{metadata.KEY}`` filled in; a target the text does not
    place becomes a last criterion."""
    for name, value in metadata.items():
        text = text.replace(f"{{metadata.{name}}}", str(value))
    if target is None or target == "":
        return text
    if "{target}" in text:
        return text.replace("{target}", str(target))
    return f"{text}\n- The answer agrees with the reference answer: {target}"


def load_tasks(config: Config) -> list[Task]:
    """The run's tasks: those ``rubric.tasks`` selects of ``rubric.dataset``, or the rubric's own task."""
    rubric = config.rubric
    loaded: dict[tuple[Path, tuple[str, ...]], Workspace] = {}  # each workspace dir is read once
    own = load_workspace(rubric.workspace, rubric.protected or None, Path.cwd(), "rubric.workspace", rubric.workspace_max_bytes, loaded)
    if not rubric.dataset:
        return [Task(MESSAGE_TASK, rubric.task, rubric.text, verify=_merged(rubric.verify, {}), workspace=own, named=False)]
    base = Path(rubric.dataset).parent if Path(rubric.dataset).is_file() else Path.cwd()
    columns = _columns(dict(rubric.fields))
    rows = _rows(rubric.dataset)
    if not rows:
        raise UsageError("rubric.dataset", f"{rubric.dataset} holds no list of tasks", "one task per line (JSONL) or a YAML list")
    tasks, seen = [], set()
    for index, row in enumerate(rows):
        key, item, where = f"rubric.dataset[{index}]", row.item, row.where
        if not isinstance(item, dict):
            raise UsageError(key, f"{where}: a task must be a mapping", "give id, task and optionally rubric and tools")
        value = {name: item.get(column) for name, column in columns.items()}
        task_id = str(index) if columns["id"] not in item else str(value["id"] if value["id"] is not None else "")
        message = value["task"]
        if not TASK_ID.match(task_id) or task_id in seen:
            raise UsageError(f"{key}.id", f"{where}: {task_id!r} is missing, repeated or not a safe name", "use letters, digits, _ . -")
        if not isinstance(message, str) or not message.strip():
            fix = "give the task message" + ("" if "task" in rubric.fields else "; a column of another name: +rubric.fields.task=NAME")
            raise UsageError(f"{key}.task", f"{where}: is missing or empty", fix)
        metadata = _mapping(value["metadata"], f"{key}.metadata", where, '{"topic": "sorting"}')
        if not isinstance(metadata, dict):
            raise UsageError(f"{key}.metadata", f"{where}: must be a mapping", 'e.g. metadata: {"topic": "sorting"}')
        text = value["rubric"] if value["rubric"] not in (None, "") else rubric.text
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"{key}.rubric", f"{where}: must be non-empty text", "give the criteria, one per line")
        tools = _mapping(value["tools"], f"{key}.tools", where, '{"run_test_suite": {"cases": []}}')
        if not isinstance(tools, dict) or not all(isinstance(v, dict) for v in tools.values()):
            raise UsageError(f"{key}.tools", f"{where}: must map tool names to settings", "e.g. tools: {run_test_suite: {cases: [...]}}")
        unknown = sorted(set(tools) - set(config.grader.tools) - set(config.worker.tools))
        if unknown:
            raise UsageError(f"{key}.tools.{unknown[0]}", f"{where}: is not a tool of this run", "add it to grader.tools or remove it")
        verify = _mapping(value["verify"], f"{key}.verify", where, '{"run_test_suite": {"suite": "hidden.yaml"}}')
        if not isinstance(verify, dict) or not all(isinstance(v, dict) for v in verify.values()):
            raise UsageError(f"{key}.verify", f"{where}: must map tool names to settings", "e.g. verify: {run_test_suite: {suite: hidden.yaml}}")
        hidden = (verify.get(WORKSPACE_CHECK) or {}).get("tests")
        if isinstance(hidden, str) and not Path(hidden).expanduser().is_absolute():  # beside the row's workspace
            verify[WORKSPACE_CHECK] = {**verify[WORKSPACE_CHECK], "tests": str(base / hidden)}
        workspace = own
        if value["workspace"] not in (None, "") or value["protected"] not in (None, ""):
            workspace = load_workspace(value["workspace"], value["protected"], base, f"{key}.workspace", rubric.workspace_max_bytes,
                                       loaded)
        seen.add(task_id)
        tasks.append(Task(task_id, message, _filled(text, value["target"], metadata), tools, _merged(rubric.verify, verify),
                          index, workspace))
    return _select(tasks, rubric.tasks)
