"""What in a config changes what a task does, and a fingerprint of it.

Two runs with the same fingerprint ran the same configuration: their tasks are repeats of one another,
whatever their plumbing (how many ran at once, how often, under which budget, where the records and
checkpoints went, which tasks of the set were picked). A resumed run may change only plumbing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

PLUMBING = (
    "run.resume", "run.console", "run.concurrency", "run.repeats", "run.cache", "run.rate_limits",
    "run.budget_tokens", "run.budget_usd", "run.preview_chars", "run.keep_checkpoints", "run.checkpointer",
    "run.checkpoint_url", "run.thread_id", "rubric.tasks", "sweep", "tags",
)
"""Keys (or whole sections) that do not change what a task does."""

RESUMABLE = (
    "run.resume", "run.console", "run.concurrency", "run.repeats", "run.cache", "run.rate_limits",
    "run.budget_tokens", "run.budget_usd", "run.preview_chars", "rubric.tasks", "sweep", "tags",
)
"""What a resume may change: plumbing that leaves the run's tasks, threads and checkpoints where they are."""


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


def behaviour(config: dict[str, Any]) -> dict[str, Any]:
    """The resolved config's keys (flattened) that change what a task does."""
    return {key: value for key, value in flatten(config).items() if not _under(key, PLUMBING)}


def fingerprint(config: dict[str, Any]) -> str:
    """A short digest of ``behaviour(config)``."""
    text = json.dumps(behaviour(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def changed(before: dict[str, Any], after: dict[str, Any], allowed: tuple[str, ...] = RESUMABLE) -> list[str]:
    """The keys whose values differ between two resolved configs, outside ``allowed``."""
    old, new = flatten(before), flatten(after)
    return sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key) and not _under(key, allowed))
