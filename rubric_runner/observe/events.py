"""``events.jsonl``: structlog JSON lines and library log records, each run's into its own file.

Runs in threads of one process share the root logger: one routing handler on it (there while
any run is active) hands each record to the file of the run whose context logged it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import structlog

from ..loop.runtime import ProcessWide
from ..redaction import redact, run_secrets

_RUN_HANDLER: ContextVar[logging.Handler | None] = ContextVar("rubric_runner_events", default=None)

_PRE_CHAIN = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


class _ToCurrentRun(logging.Handler):
    """Hands a record to the ``events.jsonl`` handler of the run in the current context, if any."""

    def handle(self, record: logging.LogRecord) -> bool:
        handler = _RUN_HANDLER.get()
        if handler is not None and record.levelno >= handler.level:
            handler.handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # handle() does the work
        pass


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


def _redact_rendered(_logger: Any, _name: str, line: str) -> str:
    return redact(line)


def _file_handler(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(default=str),
                _redact_rendered,
            ],
            foreign_pre_chain=_PRE_CHAIN,
        )
    )
    return handler


@contextlib.contextmanager
def event_log(path: Path) -> Iterator[structlog.stdlib.BoundLogger]:
    """For the length of the block: everything logged in this context goes to ``path``, redacted
    with the secrets of the environment as it started. Yields the run's structlog logger."""
    handler = _file_handler(path)
    token = _RUN_HANDLER.set(handler)
    try:
        with run_secrets(), ROUTING.held():
            yield structlog.wrap_logger(
                logging.getLogger("rubric_runner"),
                processors=[*_PRE_CHAIN, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
                wrapper_class=structlog.stdlib.BoundLogger,
            )
    finally:
        _RUN_HANDLER.reset(token)
        handler.close()
