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

import structlog

from .config import is_secret_key, secret_entries

SCHEMA_VERSION = 1
SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$")
MIN_SECRET_CHARS = 8
REDACTED = "[REDACTED]"

STATUSES = ("running", "satisfied", "max_iterations_reached", "failed", "grader_error", "error", "interrupted")
EXIT_CODES = {
    "satisfied": 0,
    "max_iterations_reached": 1,
    "failed": 1,
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

    def add(self, usage: dict[str, Any] | None) -> None:
        """Count one model call and its ``usage_metadata`` (if the provider gave one)."""
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
    schema_version: int = SCHEMA_VERSION


def secret_values() -> list[str]:
    """Values of environment variables that look like secrets (long enough to matter)."""
    return [value for name, value in os.environ.items() if SECRET_ENV.search(name) and len(value) >= MIN_SECRET_CHARS]


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every secret value from the environment replaced."""
    for value in secret_values() if secrets is None else secrets:
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


def _redact_event(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    secrets = secret_values()
    if not secrets:
        return event
    return json.loads(redact(json.dumps(event, default=str), secrets))


_PRE_CHAIN = [
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_structlog() -> None:
    """Route structlog through stdlib logging, so one handler gets both kinds of record."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
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
        self.handler = logging.FileHandler(path, encoding="utf-8")
        self.handler.setLevel(logging.INFO)
        self.handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    _redact_event,
                    structlog.processors.JSONRenderer(default=str),
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
