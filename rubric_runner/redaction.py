"""Secrets kept out of everything a run writes: values from the environment and secret-named config keys."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .environment import POSTGRES_URL_ENV

SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$")
MIN_SECRET_CHARS = 8
REDACTED = "[REDACTED]"

SECRET_WORDS = ("api_key", "apikey", "secret", "password", "access_token", "authorization")


def is_secret_key(name: str) -> bool:
    """Whether a config key's name says its value is a credential."""
    return any(word in str(name).lower() for word in SECRET_WORDS)


def secret_entries(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``(full key, value)`` of each secret-named entry anywhere in ``data`` (plain dicts and lists)."""
    if isinstance(data, list):
        return [entry for index, item in enumerate(data) for entry in secret_entries(item, f"{prefix}[{index}]")]
    if not isinstance(data, dict):
        return []
    found = []
    for key, value in data.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        found += [(full, value)] if is_secret_key(key) else secret_entries(value, full)
    return found


_RUN_SECRETS: ContextVar[tuple[str, ...] | None] = ContextVar("rubric_runner_secrets", default=None)
"""The secrets of the run this code works for, read from the environment as it started."""


def secret_values() -> list[str]:
    """Values of environment variables that look like secrets, and the password in the checkpoint
    database's URL (each long enough to matter)."""
    values = [value for name, value in os.environ.items() if SECRET_ENV.search(name)]
    values.append(urlsplit(os.environ.get(POSTGRES_URL_ENV, "")).password or "")
    return [value for value in values if len(value) >= MIN_SECRET_CHARS]


@contextlib.contextmanager
def run_secrets() -> Iterator[None]:
    """Read the environment's secrets once, for the run in this context (its threads and tasks too)."""
    token = _RUN_SECRETS.set(tuple(secret_values()))
    try:
        yield
    finally:
        _RUN_SECRETS.reset(token)


def redact(text: str, secrets: Sequence[str] | None = None) -> str:
    """``text`` with every secret replaced: ``secrets``, else the current run's, else the environment's."""
    if secrets is None:
        secrets = _RUN_SECRETS.get()
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_config(data: Any) -> Any:
    """A resolved config (plain dicts and lists) with every secret value replaced, in strings at any depth."""
    if isinstance(data, dict):
        return {key: REDACTED if is_secret_key(key) and data[key] else redact_config(value) for key, value in data.items()}
    if isinstance(data, list):
        return [redact_config(item) for item in data]
    return redact(data) if isinstance(data, str) else data


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
    masks = [s.encode() for s in (secret_values() if secrets is None else secrets)]
    if not masks or not path.is_file():
        return
    changed = False
    with closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for column in [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]:
                for rowid, value in db.execute(f'SELECT rowid, "{column}" FROM "{table}"').fetchall():
                    masked = _mask(value, masks)
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
