"""Records on disk: writing records, and the one reader every command uses (where each file is: ``layout``).

Readers never trust a run to have ended well: a dir whose ``result.json`` is missing, unreadable
or still says ``running`` still yields a record (``load_record``), with status ``error`` and its
cause, filled from the config Hydra saved for the run.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic_core import to_json

from ..redaction import redact
from . import v1
from .layout import (
    HYDRA_DIR,
    RESULT_FILE,
    is_task_dir,
    jobs_below,
    listed_task_dirs,
    run_and_turns,
    task_dir,
)
from .models import ConfigSources, ErrorInfo, RunRecord, TaskRecord
from .status import Status

UNFINISHED = "Unfinished"
"""The error type of a record that still says ``running``: its process died, or it is still going."""
BAD_RECORD = "BadRecord"
"""The error type of a record that could not be read (not JSON, or not a record)."""


def write_atomic(path: Path, text: str | bytes | Iterable[str]) -> None:
    """Write ``path`` (``text``, its pieces as they come, or bytes as they are) whole or not at all, through
    a temp file beside it: a reader (or a second writer) never sees half a file; an error names ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            with open(tmp, "w", encoding="utf-8") as file:
                file.writelines([text] if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename == str(tmp):
            exc.filename = str(path)  # the file the user knows, not its temp
        raise


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` (plain data or a pydantic model) as redacted JSON, indented, atomically; a value JSON
    has no type for as its ``str``. pydantic-core serializes it: the json module indents in pure Python,
    ten times slower, and a run writes a few files per task."""
    write_atomic(path, redact(to_json(data, indent=2, fallback=str, inf_nan_mode="constants").decode()) + "\n")


def write_record(path: Path, record: RunRecord | TaskRecord) -> None:
    """Write a record (redacted, atomically), serialized from the model itself: the same JSON as its
    ``model_dump(mode="json")``, without the dict in between."""
    write_json(path, record)


_VERSION = re.compile(rb'"schema_version":\s*(\d+)')


def _version(raw: bytes) -> int:
    """A record's ``schema_version`` (the last field it writes), read without parsing the record."""
    match = _VERSION.search(raw, max(0, raw.rfind(b'"schema_version"')))
    return int(match.group(1)) if match else 1


_JSON_KINDS = {type(None): "JSON null", bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}


def _object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw``; JSON of another kind (``null``, a string, a list) is a ValueError, as JSON
    that does not parse is."""
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"it holds {_JSON_KINDS.get(type(data), 'JSON')}, not a record (a JSON object)")
    return data


def _parsed_run(raw: bytes, run_dir: Path) -> RunRecord:
    version = _version(raw)
    if version >= 3:
        return RunRecord.model_validate_json(raw)
    if version == 1:
        return v1.run_record(_object(raw), run_dir)
    data = _object(raw)
    record = RunRecord.model_validate(data)
    if isinstance(data.get("task"), dict):  # a run of one task, whose record version 2 kept inline
        record.hold_inline(TaskRecord.model_validate(data["task"]))
    return record


def _parsed_task(raw: bytes) -> TaskRecord:
    if _version(raw) >= 2:
        return TaskRecord.model_validate_json(raw)
    return v1.task_record(_object(raw))


def read_record(path: Path) -> RunRecord | None:
    """The run record in ``path``, of any schema version, or None when there is none or it is unreadable."""
    try:
        return _parsed_run(path.read_bytes(), path.parent)
    except (OSError, ValueError):
        return None


def read_task(path: Path) -> TaskRecord | None:
    """The task record in ``path``, of any schema version, or None when there is none or it is unreadable."""
    try:
        return _parsed_task(path.read_bytes())
    except (OSError, ValueError):
        return None


def read_task_at(record_dir: Path) -> TaskRecord | None:
    """The task record in a record dir: a task's dir, or the dir of a run of one task (a turn); None when
    there is none, or the run has several."""
    try:
        raw = (record_dir / RESULT_FILE).read_bytes()
        if is_task_dir(record_dir):
            return _parsed_task(raw)
        inline = _parsed_run(raw, record_dir).inline_task
    except (OSError, ValueError):
        return None
    if inline is not None:
        return inline
    tasks = listed_task_dirs(record_dir)
    return read_task(tasks[0] / RESULT_FILE) if len(tasks) == 1 else None


def task_dirs(record: RunRecord) -> list[Path]:
    """A run's task dirs, in its order: its rows', or every dir in its ``tasks/`` for a run that ended before
    it counted them."""
    run_dir = Path(record.run_dir or ".")
    if record.tasks:
        return [task_dir(run_dir, row.task_id, row.repeat) for row in record.tasks]
    return listed_task_dirs(run_dir)


def task_records(record: RunRecord) -> list[TaskRecord]:
    """A run's task records, in its order (``task_dirs``), where they are now (a version 1 or 2 run of one
    task: the run's own)."""
    if record.inline_task is not None:
        return [record.inline_task.model_copy(update={"run_dir": record.run_dir})]
    found = []
    for path in task_dirs(record):
        task = load_task(path)
        task.run_dir = str(path)
        found.append(task)
    return found


def recorded_sources(run_dir: Path) -> ConfigSources | None:
    """Where the config of the run in ``run_dir`` came from: its record's header, else what Hydra saved in
    ``.hydra/`` (a version 1 run, or one whose record is unreadable); None when neither says."""
    record = read_record(run_dir / RESULT_FILE)
    if record is not None and record.schema_version >= 2 and (record.header.sources.overrides or record.header.config):
        return record.header.sources
    return v1.saved_sources(run_dir)


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def _fill_from_hydra(record: RunRecord, run_dir: Path) -> None:
    """What ran, from the config Hydra saved, where the header does not say (the run failed early)."""
    header = record.header
    parts = ((header.worker, "worker", "model"), (header.grader, "grader", "model"), (header.rubric, "rubric", "name"))
    if header.sources.overrides and all(getattr(part, key) for part, _, key in parts):
        return
    config = _read_yaml(run_dir / HYDRA_DIR / "config.yaml") or {}
    for part, section, key in (*parts, (header.rubric, "rubric", "task")):
        value = (config.get(section) or {}).get(key) if isinstance(config, dict) else None
        if not getattr(part, key) and isinstance(value, str):
            setattr(part, key, value)
    if not header.sources.overrides:
        header.sources = v1.saved_sources(run_dir) or header.sources


def crash_record(run_dir: Path, error: ErrorInfo, partial: RunRecord | None = None) -> RunRecord:
    """The final record of a run that ended without one: status ``error``, ``error`` its cause."""
    record = partial.model_copy(deep=True) if partial is not None else RunRecord()
    record.status, record.error, record.run_dir = Status.ERROR, error, str(run_dir)
    record.exit_code = int(Status.ERROR.exit_code)
    task = record.inline_task
    if task is not None and not task.status.terminal:  # a version 1 or 2 run of one task ended as its run did
        task.status, task.error, task.exit_code = record.status, error, record.exit_code
    _fill_from_hydra(record, run_dir)
    return record


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def load_record(run_dir: Path) -> RunRecord:
    """The run's ``result.json``, or a crash record saying why there is no final one."""
    try:
        data = _read_bytes(os.path.join(run_dir, RESULT_FILE))
        if not data:
            message = "result.json is empty: the run claimed its dir and its process died (or it is still going)"
            return crash_record(run_dir, ErrorInfo(type=UNFINISHED, message=message))
        record = _parsed_run(data, Path(run_dir))
    except FileNotFoundError:
        return crash_record(run_dir, ErrorInfo(type="NoRecord", message="the job ended before writing result.json"))
    except (OSError, ValueError) as exc:
        message = f"result.json is unreadable: {str(exc).splitlines()[0]}"
        return crash_record(run_dir, ErrorInfo(type=BAD_RECORD, message=message))
    if record.status is Status.RUNNING:
        message = "result.json still says running: the job's process died (or it is still going)"
        return crash_record(run_dir, ErrorInfo(type=UNFINISHED, message=message), record)
    _fill_from_hydra(record, run_dir)
    return record


def load_task(task_dir: str | Path) -> TaskRecord:
    """A task's ``result.json``, or a record in error saying why there is no final one (a record that still
    says ``running`` keeps what it holds)."""
    try:
        data = _read_bytes(os.path.join(task_dir, RESULT_FILE))
        record = _parsed_task(data) if data else None
    except FileNotFoundError:
        return TaskRecord(status=Status.ERROR, error=ErrorInfo(type="NoRecord", message="the task left no result.json"))
    except (OSError, ValueError) as exc:
        message = f"result.json is unreadable: {str(exc).splitlines()[0]}"
        return TaskRecord(status=Status.ERROR, error=ErrorInfo(type=BAD_RECORD, message=message))
    if record is None or record.status is Status.RUNNING:
        record = record or TaskRecord()
        record.status, record.exit_code = Status.ERROR, int(Status.ERROR.exit_code)
        record.error = ErrorInfo(type=UNFINISHED, message="result.json still says running: its process died (or it is still going)")
    return record


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (in the whole process, for that long): while thousands of
    records are read and reported on, each full collection would walk every one of them again, and
    they need none (records and report rows hold no reference cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Job:
    """A run found under a sweep or report dir: its record, ``job`` (its dir relative to the root)
    and ``reused`` (runs a resumed sweep kept)."""

    job: str
    record: RunRecord
    reused: int = 0


@gc_paused()
def collect(root: str | Path, since: str | None = None) -> list[Job]:
    """Every run under ``root``, each followed by its follow-up turns (their jobs end in ``turns/<n>``);
    each record's ``run_dir`` says where it is now (should it have moved).

    With ``since`` (when a resumed sweep started), a run that had ended before then counts as
    reused, each of its tasks; a run's aggregate counts the tasks it reused itself.
    """
    root = Path(root)
    jobs = []
    for job, run_dir in jobs_below(root):
        for path in run_and_turns(run_dir):
            record = load_record(path)
            record.run_dir = str(path)
            ended = record.ended_at
            reused = record.aggregate.reused if record.aggregate else 0
            kept = bool(since and ended and ended < since)  # by a resumed sweep: each of its tasks
            name = job if path is run_dir else path.relative_to(root).as_posix()
            jobs.append(Job(name, record, reused or kept * max(len(record.tasks), 1)))
    return jobs
