"""What a run leaves behind: the result record, events.jsonl via structlog, redaction."""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import structlog
import yaml

from .config import POSTGRES_URL_ENV, is_secret_key, secret_entries

SCHEMA_VERSION = 1
SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$")
MIN_SECRET_CHARS = 8
REDACTED = "[REDACTED]"

STATUSES = ("running", "satisfied", "max_iterations_reached", "failed", "unsupported", "grader_error", "error", "interrupted")
TERMINAL_STATUSES = ("satisfied", "max_iterations_reached", "failed", "unsupported", "grader_error")
"""Statuses of a run that finished its grading loop; resuming such a run does nothing."""
EXIT_CODES = {
    "satisfied": 0,
    "max_iterations_reached": 1,
    "failed": 1,
    "unsupported": 1,
    "grader_error": 3,
    "error": 3,
    "interrupted": 130,
}
CONFIG_ERROR_EXIT = 2


@dataclass
class Usage:
    """Token counts for one model role."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_calls: int = 0

    def merge(self, other: Usage) -> None:
        """Add another count to this one."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def add(self, usage: dict[str, Any] | None, cached: bool = False) -> None:
        """Count one model call and its ``usage_metadata``; a cache hit costs no tokens."""
        if cached:
            self.cached_calls += 1
            return
        self.calls += 1
        usage = usage or {}
        self.input_tokens += int(usage.get("input_tokens") or 0)
        self.output_tokens += int(usage.get("output_tokens") or 0)
        self.total_tokens += int(usage.get("total_tokens") or 0)


@dataclass
class RunResult:
    """The record of one run, written to ``result.json`` however the run ends.

    ``status`` is one of ``STATUSES``; ``iterations`` counts grading passes;
    ``evaluations`` holds each pass's ``result``, ``explanation`` and
    ``criteria`` as the middleware reported them; ``error`` is set when the
    run ended by an exception (``{type, message}``) or on a config error.

    A task of a multi-task run has ``task_id`` and ``repeat``. The run's own
    record then lists its ``tasks`` (one row each) and an ``aggregate``;
    its status is the worst task status and its usage the sum.
    """

    status: str = "running"
    exit_code: int | None = None
    iterations: int = 0
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str | None = None
    usage: dict[str, Usage] = field(default_factory=lambda: {"worker": Usage(), "grader": Usage()})
    worker: dict[str, Any] = field(default_factory=dict)
    grader: dict[str, Any] = field(default_factory=dict)
    rubric: dict[str, Any] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    thread_id: str | None = None
    grading_run_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_seconds: float | None = None
    run_dir: str | None = None
    error: dict[str, str] | None = None
    resumed: int = 0
    task_id: str | None = None
    repeat: int | None = None
    tasks: list[dict[str, Any]] = field(default_factory=list)
    aggregate: dict[str, Any] | None = None
    regraded_from: str | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        """Rebuild a record read from ``result.json``."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["usage"] = {role: Usage(**counts) for role, counts in data.get("usage", {}).items()}
        return cls(**known)


def secret_values() -> list[str]:
    """Values of environment variables that look like secrets, and the password in the checkpoint
    database's URL (each long enough to matter)."""
    values = [value for name, value in os.environ.items() if SECRET_ENV.search(name)]
    values.append(urlsplit(os.environ.get(POSTGRES_URL_ENV, "")).password or "")
    return [value for value in values if len(value) >= MIN_SECRET_CHARS]


def read_result(path: Path) -> RunResult | None:
    """The record in ``path``, or None when there is none (or it is unreadable)."""
    try:
        return RunResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def saved_overrides(run_dir: Path) -> list[str] | None:
    """The command-line overrides Hydra saved for a run (``.hydra/overrides.yaml``), or None."""
    path = run_dir / ".hydra" / "overrides.yaml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or []) if path.is_file() else None


_secrets: list[str] = []


def refresh_secrets() -> None:
    """Read the values of environment variables that look like secrets (done as a run starts)."""
    _secrets[:] = secret_values()


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every secret replaced: ``secrets``, or the environment's as the run started."""
    for value in _secrets if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def _override_parts(override: str) -> tuple[str, str | None]:
    """``"+a.b=v"`` -> ``("a.b", "v")``; ``(key, None)`` for an override without a value."""
    key, sep, value = override.partition("=")
    return key.lstrip("+~"), value if sep else None


def redact_override(override: str) -> str:
    """A command-line override with the value of a secret-named key replaced."""
    key, value = _override_parts(override)
    if value is None or not is_secret_key(key.rsplit(".", 1)[-1]):
        return override
    return override[: len(override) - len(value)] + REDACTED


def config_secrets(data: Any, overrides: list[str]) -> list[str]:
    """Values of secret-named keys given in config (``data``: plain dicts and lists) or overrides."""
    found = [value for key, value in map(_override_parts, overrides) if value and is_secret_key(key.rsplit(".", 1)[-1])]
    found += [str(value) for _, value in secret_entries(data) if isinstance(value, (str, int))]
    return sorted({value for value in found if len(value) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def scrub_text_file(path: Path, secrets: list[str]) -> None:
    """Replace ``secrets`` in a text file that was written before they were known."""
    text = path.read_text(encoding="utf-8")
    scrubbed = redact(text, secrets)
    if scrubbed != text:
        path.write_text(scrubbed, encoding="utf-8")


def scrub_sqlite(path: Path, secrets: list[str] | None = None) -> None:
    """Mask secrets in every cell of a SQLite file, then VACUUM so no freed page keeps them.

    Each secret becomes as many ``*`` bytes, so serialized values (msgpack) keep their lengths.
    """
    secrets = [s.encode() for s in (secret_values() if secrets is None else secrets)]
    if not secrets or not path.is_file():
        return
    changed = False
    with closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for column in [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]:
                for rowid, value in db.execute(f'SELECT rowid, "{column}" FROM "{table}"').fetchall():
                    masked = _mask(value, secrets)
                    if masked != value:
                        db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (masked, rowid))
                        changed = True
        if changed:
            db.commit()
            db.execute("VACUUM")


def _mask(value: Any, secrets: list[bytes]) -> Any:
    if isinstance(value, str):
        return _mask(value.encode(), secrets).decode()
    if isinstance(value, bytes):
        for secret in secrets:
            value = value.replace(secret, b"*" * len(secret))
    return value


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as redacted JSON, atomically (temp file + rename)."""
    text = redact(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_result(path: Path, result: RunResult) -> None:
    """Write the result record."""
    write_json(path, asdict(result))


def _redact_rendered(_logger: Any, _name: str, line: str) -> str:
    return redact(line)


_PRE_CHAIN = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_structlog() -> None:
    """Route structlog through stdlib logging, so one handler gets both kinds of record."""
    structlog.configure(
        processors=[
            *_PRE_CHAIN,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


class EventLog:
    """Attach an ``events.jsonl`` handler to the root logger for the length of a run."""

    def __init__(self, path: Path) -> None:
        configure_structlog()
        refresh_secrets()
        self.handler = logging.FileHandler(path, encoding="utf-8")
        self.handler.setLevel(logging.INFO)
        self.handler.setFormatter(
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
        self.root = logging.getLogger()
        self.previous_level = self.root.level

    def __enter__(self) -> structlog.stdlib.BoundLogger:
        self.root.addHandler(self.handler)
        self.root.setLevel(min(self.previous_level or logging.WARNING, logging.INFO))
        return structlog.get_logger("rubric_runner")

    def __exit__(self, *exc: object) -> None:
        self.root.removeHandler(self.handler)
        self.root.setLevel(self.previous_level)
        self.handler.close()
