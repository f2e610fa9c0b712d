"""Records of schema version 1, one model for every kind of record, read as the current version's.

A version 1 ``result.json`` held a run, a task of a task set, a follow-up turn or a regraded
transcript in one shape; its run's config sources are in the ``.hydra/`` dir Hydra saved beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .layout import HYDRA_DIR
from .models import (
    ConfigSources,
    RubricInfo,
    RunHeader,
    RunKind,
    RunRecord,
    TaskRecord,
    Usage,
)

COMMAND_LINE_SOURCES = ("command-line", "hydra.searchpath in command-line")
"""Hydra's providers of the config dirs a command line added (``--config-dir``, ``hydra.searchpath``)."""


def _yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def saved_sources(run_dir: Path) -> ConfigSources | None:
    """The config sources Hydra saved in ``.hydra/`` (overrides, and the config dirs of ``hydra.yaml``), or None."""
    overrides = _yaml(run_dir / HYDRA_DIR / "overrides.yaml")
    if not isinstance(overrides, list):
        return None
    hydra = (_yaml(run_dir / HYDRA_DIR / "hydra.yaml") or {}).get("hydra") or {}
    sources = ((hydra.get("runtime") or {}).get("config_sources")) or []
    config_dirs = [source["path"] if source.get("schema") == "file" else f"{source.get('schema')}://{source['path']}"
                   for source in sources if isinstance(source, dict) and source.get("provider") in COMMAND_LINE_SOURCES]
    return ConfigSources(overrides=[str(o) for o in overrides], config_dirs=config_dirs)


def task_record(data: dict[str, Any]) -> TaskRecord:
    """A version 1 record's task: what it did, with the task message and criteria of its ``rubric``."""
    rubric = data.get("rubric") or {}
    return TaskRecord.model_validate({**data, "task": rubric.get("task"), "rubric": rubric.get("text"),
                                      "rubric_carried_over": rubric.get("carried_over")})


def run_record(data: dict[str, Any], run_dir: Path) -> RunRecord:
    """A version 1 record of a run, a turn or a regraded transcript, with its header rebuilt from the record
    and the config Hydra saved beside it; a run of one task holds the task, inline (``RunRecord.inline_task``)."""
    kind = RunKind.REGRADE if data.get("regraded_from") else RunKind.TURN if data.get("turn") else RunKind.RUN
    config = _yaml(run_dir / HYDRA_DIR / "config.yaml")
    sources = saved_sources(run_dir) or ConfigSources(overrides=data.get("overrides") or [])
    rubric = data.get("rubric") or {}
    header = RunHeader.model_validate({
        "kind": kind, "sources": sources, "config": config if isinstance(config, dict) else {},
        "worker": data.get("worker") or {}, "grader": data.get("grader") or {},
        "rubric": RubricInfo(name=rubric.get("name"), text=rubric.get("text"), task=rubric.get("task")),
        "tags": data.get("tags") or [], "turn": data.get("turn"), "continued_from": data.get("continued_from"),
        "regraded_from": data.get("regraded_from"),
    })
    record = RunRecord.model_validate({**data, "header": header})
    if not data.get("tasks") and not data.get("aggregate"):
        record.hold_inline(task_record(data))
    elif record.aggregate is not None and isinstance(data.get("usage"), dict):
        record.aggregate.usage = {role: Usage.model_validate(counts) for role, counts in data["usage"].items()}
    return record
