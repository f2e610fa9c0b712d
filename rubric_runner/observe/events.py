"""``events.jsonl``: structlog JSON lines and library log records, each run's into its own file.

A run's own events are rendered by one structlog processor and written straight to its file; an event
logged inside a task has the task's fields (``bind_task``). Runs in threads of one process share the
root logger: one routing handler on it (there while any run is active) hands each library record to the
file of the run whose context logged it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import structlog
from pydantic_core import to_json

from ..environment import ProcessWide
from ..redaction import redact, run_secrets

_RUN_HANDLER: ContextVar[logging.Handler | None] = ContextVar("rubric_runner_events", default=None)

_TASK_FIELDS: ContextVar[Mapping[str, Any]] = ContextVar("rubric_runner_task_fields", default=MappingProxyType({}))
TAIL_CHUNK = 65536
"""How much of a file's end is read at a time, looking for its last whole line."""
_LEVELS = {"warn": "warning", "exception": "error"}
"""A logger method's level, where the method has another name (as structlog's ``add_log_level`` says)."""


def bind_task(**fields: Any) -> Token:
    """Add ``fields`` (``task_id``, ``repeat``) to every event logged in this context from now on."""
    return _TASK_FIELDS.set(fields)


def unbind_task(token: Token) -> None:
    """The fields bound before ``bind_task`` again."""
    _TASK_FIELDS.reset(token)


def _whole(fd: int) -> int:
    """Cut the file's last line if it is torn (its writer was killed, or found no room, mid-line); its size then."""
    size = end = os.lseek(fd, 0, os.SEEK_END)
    while end > 0:
        start = max(0, end - TAIL_CHUNK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            whole = start + newline + 1
            break
        end = start
    else:
        whole = 0
    if whole != size:
        os.ftruncate(fd, whole)
    return whole


class _Lines:
    """One run's ``events.jsonl``, open for appending: whole lines, each written at once, one writer at a time.

    A torn last line (a process killed mid-line) is cut when the file is opened. A line that finds no room is
    taken back whole, and it and every later one raise the OSError that stopped it: the file stays whole, and
    the run learns from its next event that it cannot go on recording.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self.size = _whole(self.fd)
        self.lock = threading.Lock()
        self.failed: OSError | None = None

    def msg(self, line: str) -> None:
        data = (line + "\n").encode()
        with self.lock:
            if self.failed is None:
                try:
                    left = memoryview(data)
                    while left:
                        left = left[os.write(self.fd, left):]
                    self.size += len(data)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(self.fd, self.size)
                    self.failed = exc
            if self.failed is not None:
                raise OSError(self.failed.errno, self.failed.strerror, str(self.path))

    info = warning = error = exception = msg

    def close(self) -> None:
        with self.lock:
            os.close(self.fd)


def _rendered(event: MutableMapping[str, Any]) -> str:
    """The event as one JSON line, stamped with the UTC time (pydantic-core: a few times faster than the json
    module), secrets redacted; a value JSON has no type for as its ``str``."""
    event["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return redact(to_json(event, fallback=str, inf_nan_mode="constants").decode())


def _line(logger: Any, method: str, event: MutableMapping[str, Any]) -> str:
    """The structlog processor of a run's events: the task's fields, the level, an exception's traceback
    (from ``exc_info``), rendered."""
    for key, value in _TASK_FIELDS.get().items():
        event.setdefault(key, value)
    event["level"] = _LEVELS.get(method, method)
    if "exc_info" in event:
        event = structlog.processors.format_exc_info(logger, method, event)
    return _rendered(event)


class _ToCurrentRun(logging.Handler):
    """Hands a record to the ``events.jsonl`` handler of the run in the current context, if any."""

    def handle(self, record: logging.LogRecord) -> bool:
        handler = _RUN_HANDLER.get()
        if handler is not None and record.levelno >= handler.level:
            handler.handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # handle() does the work
        pass


class _LibraryRecords(logging.Handler):
    """Library log records, rendered as the run's own events are (the bound context, level, logger name,
    time, the exception's traceback), into its lines."""

    def __init__(self, lines: _Lines) -> None:
        super().__init__(logging.INFO)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        event = {"event": record.getMessage(), **_TASK_FIELDS.get(), "level": record.levelname.lower(), "logger": record.name}
        if record.exc_info:
            event["exception"] = logging.Formatter().formatException(record.exc_info)
        with contextlib.suppress(OSError):  # no room: the run's own next event says so, not the library's logging
            self.lines.msg(_rendered(event))


_ROUTER = _ToCurrentRun()


def _route() -> int:
    root = logging.getLogger()
    root.addHandler(_ROUTER)
    previous = root.level
    root.setLevel(min(previous or logging.WARNING, logging.INFO))
    return previous


def _unroute(previous: int) -> None:
    root = logging.getLogger()
    root.removeHandler(_ROUTER)
    root.setLevel(previous)


ROUTING = ProcessWide(_route, _unroute)
"""The routing handler on the root logger, and the root level at INFO, while any run is active."""


@contextlib.contextmanager
def event_log(path: Path) -> Iterator[Any]:
    """For the length of the block: everything logged in this context goes to ``path``, redacted
    with the secrets of the environment as it started. Yields the run's structlog logger, which
    writes its lines straight to the file (the library records logged meanwhile go through ``logging``)."""
    lines = _Lines(path)
    token = _RUN_HANDLER.set(_LibraryRecords(lines))
    try:
        with run_secrets(), ROUTING.held():
            yield structlog.wrap_logger(
                lines,
                processors=[_line],
                wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
            ).bind(logger="rubric_runner")  # the bound logger itself, not a proxy that binds a new one per call
    finally:
        _RUN_HANDLER.reset(token)
        lines.close()
