"""What in a config changes what a task does, and a fingerprint of it.

Two runs with the same fingerprint ran the same configuration: their tasks are repeats of one another,
whatever their plumbing (how many ran at once, how often, under which budget, where the records and
checkpoints went) and whichever tasks they were given (``TASK_SELECTION``): shards of one task set,
run as several jobs, are one configuration. A resumed run may change only plumbing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

PLUMBING = (
    "run.resume", "run.console", "run.concurrency", "run.repeats", "run.cache", "run.rate_limits",
    "run.budget_tokens", "run.budget_usd", "run.preview_chars", "run.keep_checkpoints", "run.checkpointer",
    "run.checkpoint_url", "run.thread_id", "sweep", "tags",
)
"""Keys (or whole sections) that do not change what a task does."""

TASK_SELECTION = ("rubric.tasks", "rubric.task")
"""Keys that say which tasks run, not how: the tasks picked of a set, or the one task's message. A key
whose override interpolates one of them (``worker.script=${rubric.task}.yaml``), or a key that does,
varies with the task too."""

_REFERENCE = re.compile(r"\$\{\s*([\w.]+)\s*\}")

RESUMABLE = (
    "run.resume", "run.console", "run.concurrency", "run.repeats", "run.cache", "run.rate_limits",
    "run.budget_tokens", "run.budget_usd", "run.preview_chars", "sweep", "tags",
)
"""What a resume may change: plumbing that leaves the run's tasks, threads and checkpoints where they are (the
task selection is not: a resume with fewer tasks would drop the others from the run's record)."""


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists stay values."""
    if not isinstance(data, dict) or not data:
        return {prefix: data} if prefix else {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _under(key: str, sections: tuple[str, ...]) -> bool:
    return any(key == section or key.startswith(section + ".") for section in sections)


def _task_dependent(overrides: Sequence[str]) -> tuple[str, ...]:
    """The keys that ``overrides`` set from a ``TASK_SELECTION`` key, or from a key set so."""
    references = {}
    for override in overrides:
        key, equals, value = override.partition("=")
        if equals:  # a swept value's ${...} is recorded escaped: $\{...\}
            references[key.lstrip("+~")] = set(_REFERENCE.findall(re.sub(r"\\(.)", r"\1", value)))
    dependent: set[str] = set(TASK_SELECTION)
    while grown := {key for key, names in references.items() if key not in dependent and names & dependent}:
        dependent |= grown
    return tuple(sorted(dependent - set(TASK_SELECTION)))


def behaviour(config: dict[str, Any], overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config's keys (flattened) that change what a task does, given the ``overrides`` it
    was composed with (keys set from the task selection vary with the task)."""
    left_out = (*PLUMBING, *TASK_SELECTION, *_task_dependent(overrides))
    return {key: value for key, value in flatten(config).items() if not _under(key, left_out)}


def behaviour_overrides(overrides: Sequence[str]) -> dict[str, str]:
    """The ``key=value`` overrides that may change what a task does (a group choice, ``rubric=code``, too), as
    given, a swept value's escapes undone; not plumbing, the task selection, nor Hydra's own."""
    left_out = (*PLUMBING, *TASK_SELECTION, *_task_dependent(overrides), "hydra")
    pairs = (override.partition("=") for override in overrides)
    return {key: re.sub(r"\\(.)", r"\1", value) for key, equals, value in pairs
            if equals and not _under(key.lstrip("+~").replace("/", "."), left_out)}


def fingerprint(config: dict[str, Any], overrides: Sequence[str] = ()) -> str:
    """A short digest of ``behaviour(config, overrides)``."""
    text = json.dumps(behaviour(config, overrides), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def changed(before: dict[str, Any], after: dict[str, Any], allowed: tuple[str, ...] = RESUMABLE) -> list[str]:
    """The keys whose values differ between two resolved configs, outside ``allowed``."""
    old, new = flatten(before), flatten(after)
    return sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key) and not _under(key, allowed))
