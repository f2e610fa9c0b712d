"""People's labels of a run's answers, in the run dir's ``labels.json``.

The file (``FORMAT`` 1) maps each labelled record dir, relative to the run dir (``.`` for a run of one
task, ``tasks/<id>-r<k>`` for a task of a task set), to a label::

    {"format": 1,
     "labels": {"tasks/HumanEval-3-r0": {"satisfied": false,
                                         "criteria": {"The code does what the docstring asks, ...": false},
                                         "note": "fails on [1, -1]", "verdict_seen": false,
                                         "labelled_at": "2026-12-01T18:00:00Z"}}}

``satisfied`` is the person's verdict on the final answer (true, false, or null when not given),
``criteria`` each criterion's pass or fail by name (those left out were not judged), ``verdict_seen``
whether the grader's verdict was shown before the label was given. Every save writes a temp file and
renames it over the old one, so the file is always whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.agreement import Label
from ..errors import UsageError
from ..paths import Resolver
from ..records import find_run_dirs, now, write_atomic

LABELS_FILE = "labels.json"
FORMAT = 1


@dataclass
class PersonLabel:
    """One person's label of a record's final answer, as saved."""

    satisfied: bool | None
    criteria: dict[str, bool] = field(default_factory=dict)
    note: str = ""
    verdict_seen: bool = False
    labelled_at: str = ""

    def as_label(self) -> Label:
        return Label(self.satisfied, dict(self.criteria))


def _parsed(key: str, raw: Any, path: Path) -> PersonLabel:
    if not isinstance(raw, dict) or not isinstance(raw.get("satisfied", None), (bool, type(None))):
        raise UsageError(str(path), f"the label of {key} is not a mapping with satisfied true, false or null",
                         "fix or remove that label")
    criteria = raw.get("criteria") or {}
    if not isinstance(criteria, dict) or not all(isinstance(v, bool) for v in criteria.values()):
        raise UsageError(str(path), f"the criteria of {key}'s label must map names to true or false", "fix that label")
    return PersonLabel(raw.get("satisfied"), dict(criteria), str(raw.get("note") or ""), bool(raw.get("verdict_seen")),
                       str(raw.get("labelled_at") or ""))


def read_labels(run_dir: Path) -> dict[str, PersonLabel]:
    """The labels saved in ``run_dir``, by record dir relative to it; none when there is no file."""
    path = Path(run_dir) / LABELS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise UsageError(str(path), f"is not JSON: {exc}", "fix the file, or move it away to start again") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("labels"), dict):
        raise UsageError(str(path), f"is not a labels file of format {FORMAT}", "fix the file, or move it away to start again")
    return {key: _parsed(key, raw, path) for key, raw in data["labels"].items()}


def write_labels(run_dir: Path, labels: dict[str, PersonLabel]) -> Path:
    """Save ``labels`` as ``run_dir``'s labels file: a temp file renamed over the old one."""
    path = Path(run_dir) / LABELS_FILE
    data = {"format": FORMAT, "labels": {key: vars(label) for key, label in sorted(labels.items())}}
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def save_label(run_dir: Path, key: str, label: PersonLabel) -> Path:
    """Add or replace the label of record dir ``key`` (relative to ``run_dir``), stamped with the time."""
    labels = read_labels(run_dir)
    label.labelled_at = label.labelled_at or now()
    labels[key] = label
    return write_labels(run_dir, labels)


def _is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ".hydra", "overrides.yaml"))


def _run_dir_above(parent: str) -> str | None:
    """The run dir a record dir in ``parent`` belongs to when it is none itself: ``parent`` or one of the
    three dirs above it (the dir its task set or turns are in)."""
    for _ in range(4):
        if _is_run_dir(parent):
            return parent
        parent, below = os.path.dirname(parent), parent
        if parent == below:
            return None
    return None


def labels_of(record_dirs: Iterable[str | Path]) -> dict[str, Label]:
    """The labels of ``record_dirs`` (transcripts graded), from their run dirs' labels files, by the record
    dir's absolute path; a labels file that cannot be read gives none (the reports leave it out)."""
    found: dict[str, Label] = {}
    read: dict[str, dict[str, PersonLabel]] = {}
    above: dict[str, str | None] = {}
    resolved = Resolver()
    for record_dir in {resolved(d) for d in record_dirs}:
        if _is_run_dir(record_dir):
            run_dir: str | None = record_dir
        else:
            parent = os.path.dirname(record_dir)
            if parent not in above:
                above[parent] = _run_dir_above(parent)
            run_dir = above[parent]
        if run_dir is None:
            continue
        if run_dir not in read:
            try:
                read[run_dir] = read_labels(Path(run_dir))
            except UsageError:
                read[run_dir] = {}
        key = "." if record_dir == run_dir else record_dir[len(run_dir):].lstrip(os.sep).replace(os.sep, "/")
        if read[run_dir] and (label := read[run_dir].get(key)) is not None:
            found[record_dir] = label.as_label()
    return found


def labels_under(root: Path) -> dict[str, Label]:
    """Every label of every run under ``root`` (a run dir or a sweep dir), by the labelled record dir's
    absolute path."""
    found = {}
    for run_dir in find_run_dirs(Path(root)):
        for key, label in read_labels(run_dir).items():
            found[str((run_dir / key).resolve())] = label.as_label()
    return found
