"""A run dir's layout: the name of every file and dir in it, where each record goes, and what a path says.

A run dir holds its ``result.json``, ``events.jsonl``, checkpoints and ``.hydra/``, and each task x repeat
in ``tasks/<id>-r<k>/``; a task's follow-up turns are runs of their own in ``turns/<n>/`` below its dir
(below the run dir for a run of one task written by schema version 1 or 2), and a regrade's records go in
``regrades/<time>/`` below the run or sweep it grades. Nothing else in the package spells these names.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULT_FILE = "result.json"
EVENTS_FILE = "events.jsonl"
TRANSCRIPT_FILE = "transcript.json"
CHECKPOINT_FILE = "checkpoints.sqlite"
HYDRA_DIR = ".hydra"
"""What Hydra saved of a run's config: ``overrides.yaml``, ``config.yaml``, ``hydra.yaml``."""
REGRADES_DIR = "regrades"
"""Below a run or sweep dir: ``regrades/<time>/``, the records of its transcripts graded again."""
TASKS_DIR = "tasks"
"""Where a run keeps each task's files: ``tasks/<id>-r<repeat>/``."""
TURNS_DIR = "turns"
"""Below a record's dir: ``turns/<n>/``, the records of its follow-up turns (n = 2, 3, ...)."""
MESSAGE_TASK = "task"
"""The name of a task that has no id (the rubric's own message) in its run's ``tasks/``."""


def task_key(task_id: str | None, repeat: int | None) -> str:
    """A task x repeat's name in its run: ``<id>-r<k>``, its dir's name below ``tasks/``."""
    return f"{task_id or MESSAGE_TASK}-r{repeat or 0}"


def task_dir(run_dir: Path, task_id: str | None, repeat: int | None) -> Path:
    """Where a run keeps a task x repeat's files."""
    return run_dir / TASKS_DIR / task_key(task_id, repeat)


def natural_key(path: str) -> list[Any]:
    """A name's sort key with its numbers compared as numbers (``t2`` before ``t10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def dir_entries(path: str | Path) -> list[os.DirEntry]:
    """What is in dir ``path``; nothing when it is not a readable dir."""
    if not os.path.isdir(path):  # most runs have no turns, most dirs no tasks: cheaper than a failed scandir
        return []
    try:
        with os.scandir(path) as entries:
            return list(entries)
    except OSError:
        return []


def listed_task_dirs(run_dir: Path) -> list[Path]:
    """Every dir in a run's ``tasks/``, in natural order (``t2-r0`` before ``t10-r0``)."""
    names = [entry.name for entry in dir_entries(run_dir / TASKS_DIR) if entry.is_dir()]
    return [run_dir / TASKS_DIR / name for name in sorted(names, key=natural_key)]


def is_task_dir(record_dir: Path) -> bool:
    """Whether a record dir is a task's, ``tasks/<id>-r<k>/`` of a run."""
    return record_dir.parent.name == TASKS_DIR


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a run: its record, or the config Hydra saved for it."""
    return os.path.isfile(os.path.join(path, RESULT_FILE)) or os.path.isfile(os.path.join(path, HYDRA_DIR, "overrides.yaml"))


def _run_dirs_below(path: str, relative: str, found: list[tuple[str, str]]) -> None:
    for entry in dir_entries(path):
        if not entry.is_dir(follow_symlinks=False) or entry.name.startswith(".") or entry.name == REGRADES_DIR:
            continue
        name = f"{relative}/{entry.name}" if relative else entry.name
        if is_run_dir(entry.path):
            found.append((name, entry.path))
        else:
            _run_dirs_below(entry.path, name, found)


def jobs_below(root: Path) -> list[tuple[str, Path]]:
    """``find_run_dirs``, each run dir with its path relative to ``root`` (``.`` for ``root``)."""
    if is_run_dir(str(root)):
        return [(".", root)]
    found: list[tuple[str, str]] = []
    _run_dirs_below(str(root), "", found)
    return [(job, Path(path)) for job, path in sorted(found, key=lambda item: natural_key(item[0]))]


def find_run_dirs(root: Path) -> list[Path]:
    """``root`` if it is a run dir, else every run dir below it (a sweep's jobs), in job order; the
    regrades of a sweep below it are not its runs."""
    return [path for _, path in jobs_below(root)]


def record_dirs(run_dir: Path) -> list[Path]:
    """The dirs of a run's own records: the run dir, and each task's dir."""
    return [run_dir, *listed_task_dirs(run_dir)]


def turn_dirs(record_dir: Path) -> list[Path]:
    """The dirs of the follow-up turns on a record's thread, in turn order."""
    found = [entry for entry in dir_entries(os.path.join(record_dir, TURNS_DIR))
             if entry.name.isdigit() and os.path.isfile(os.path.join(entry.path, RESULT_FILE))]
    return [record_dir / TURNS_DIR / entry.name for entry in sorted(found, key=lambda entry: int(entry.name))]


def turn_dir(first: Path, number: int) -> Path:
    """Where turn ``number`` (2, 3, ...) of the thread whose first turn's record is in ``first`` goes."""
    return first / TURNS_DIR / str(number)


def turn_root(record_dir: Path) -> Path:
    """The record dir of a thread's first turn, from the dir of any of its turns."""
    return record_dir.parent.parent if record_dir.parent.name == TURNS_DIR else record_dir


def turn_number(record_dir: Path) -> int:
    """The turn a record dir holds: n for ``turns/<n>/``, else 1."""
    return int(record_dir.name) if record_dir.parent.name == TURNS_DIR and record_dir.name.isdigit() else 1


def thread_home(record_dir: Path) -> Path:
    """The run dir a thread started in (its checkpoints are there), from the dir of any of its turns."""
    first = turn_root(record_dir)
    return first.parent.parent if is_task_dir(first) else first


def move_task_files(run_dir: Path, target: Path, own: tuple[str, ...] = ()) -> None:
    """Move the files a version 1 or 2 run of one task kept of its task in the run dir into the task's dir
    ``target``: its transcript, its turns, and ``own`` (what else a task keeps in its dir)."""
    for name in (TRANSCRIPT_FILE, TURNS_DIR, *own):
        if (run_dir / name).exists():
            os.replace(run_dir / name, target / name)


def transcript_dirs(record_dir: Path) -> list[Path]:
    """The dirs under a run's record dir that hold a transcript: each task's (itself, for a version 1 or 2 run
    of one task)."""
    if (record_dir / TRANSCRIPT_FILE).is_file():
        return [record_dir]
    return sorted(path.parent for path in record_dir.glob(f"{TASKS_DIR}/*/{TRANSCRIPT_FILE}"))


def run_and_turns(run_dir: Path) -> list[Path]:
    """A run dir and the dirs of its follow-up turns (each a run of its own: graded again, collected, on its own)."""
    return [run_dir, *(turn for record_dir in record_dirs(run_dir) for turn in turn_dirs(record_dir))]


def new_regrade_dir(root: Path) -> Path:
    """A new dir in ``root``'s ``regrades/`` named by the time, ``-2``, ``-3``, ... added when another regrade
    made one in the same second (making it is atomic, so regrades started at once never share one)."""
    parent = root / REGRADES_DIR
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    out_dir, number = parent / stamp, 1
    while True:
        try:
            out_dir.mkdir()
            return out_dir
        except FileExistsError:
            number += 1
            out_dir = parent / f"{stamp}-{number}"
