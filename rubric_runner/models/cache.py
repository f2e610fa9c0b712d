"""A persistent model-response cache in a SQLite file, safe for concurrent processes.

It keeps no secret at rest: an entry is stored under a hash of its request, labelled with the model's class
and name only (no parameters, so no request headers), and its reply with every secret the redactor knows
replaced. A cache that holds one of those secrets in clear (written before) is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration

from ..compat.deepagents import NONCE
from ..context import current_task
from ..errors import UsageError, check_database
from ..redaction import redact, secret_values
from .replies import storable

VARYING = ("id", "response_metadata", "usage_metadata")
"""What a message carries that differs from run to run, or between a live reply and its cached copy,
but is never sent to a provider: left out of the key."""

SETUP_ATTEMPTS = 100
SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    llm TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now'))
)
"""


def sent(prompt: str) -> str:
    """What a provider receives of the messages in ``prompt`` (LangChain's serialized list): without
    ``VARYING`` fields, and with the nonce of RubricMiddleware's payload tags made constant."""
    try:
        messages = json.loads(prompt)
    except ValueError:
        return NONCE.sub(r"\1N", prompt)
    for message in messages if isinstance(messages, list) else []:
        kwargs = message.get("kwargs") if isinstance(message, dict) else None
        if isinstance(kwargs, dict):
            for key in VARYING:
                kwargs.pop(key, None)
    return NONCE.sub(r"\1N", json.dumps(messages, sort_keys=True))


def cache_key(prompt: str, llm_string: str, repeat: int | str) -> str:
    """Model and parameters (``llm_string``: includes bound tools), what the messages send, and the repeat index."""
    material = "\x00".join((sent(prompt), llm_string, str(repeat)))
    return hashlib.sha256(material.encode()).hexdigest()


def _encode(generations: Sequence[Any]) -> str:
    """The generations as JSON, each secret the redactor knows replaced."""
    return redact(json.dumps(
        [{"message": message_to_dict(g.message), "generation_info": g.generation_info} for g in generations],
        default=str,
    ))


def model_label(llm_string: str) -> str:
    """The model an entry is for, as a person reads it (``ChatOpenAI gpt-5.5``): the class and model name of a
    serialized model, none of its parameters (its request headers among them)."""
    try:
        serialized = json.loads(llm_string.partition("---")[0])
        kwargs = serialized.get("kwargs", {})
        name = kwargs.get("model_name") or kwargs.get("model") or ""
        return redact(f"{serialized['id'][-1]} {name}".strip())
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return "model"


def _refuse_secrets(path: Path) -> None:
    """A cache holding a secret the redactor knows, in clear (written before entries were redacted), is refused,
    read only so that it is left as it was."""
    query = "SELECT 1 FROM responses WHERE instr(llm, ?) OR instr(value, ?) LIMIT 1"
    with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)) as connection:
        try:
            found = any(connection.execute(query, (secret, secret)).fetchall() for secret in secret_values())
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            found = False
        if found:
            raise UsageError("run.cache", f"{path} holds a provider key in clear (an earlier version stored request headers)",
                             f"delete it, rm {path}*, and its replies are asked for again; or set run.cache=null")


class SQLiteResponseCache(BaseCache):
    """LangChain ``BaseCache`` in SQLite (WAL mode, one short transaction per write).

    The repeat index of the current task is part of the key, so repeats of a
    task are not collapsed into one answer. Replayed generations are marked
    ``response_metadata["cache_hit"] = True``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_database(self.path, "run.cache", f"delete {self.path} or give run.cache another file: it only "
                       "holds replies to replay, and the next run makes them again")
        self._local = threading.local()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if self.path.is_file():
            _refuse_secrets(self.path)
        self._set_up(self._connect())

    @staticmethod
    def _set_up(connection: sqlite3.Connection) -> None:
        """WAL mode and the table. Switching the journal mode takes an exclusive lock without
        waiting for it, so a process that loses that race to another one tries again."""
        for attempt in range(SETUP_ATTEMPTS):
            try:
                if connection.execute("PRAGMA journal_mode").fetchall()[0][0] != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == SETUP_ATTEMPTS - 1:
                    raise
                time.sleep(0.05)

    def _connect(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            connection.execute("PRAGMA busy_timeout=30000")
            self._local.connection = connection
        return connection

    @staticmethod
    def _repeat() -> int | str:
        """The repeat index; with a ``resample`` attempt's earlier replies, ``"<repeat>+<replies>"``."""
        task = current_task()
        if task is None:
            return 0
        return f"{task.ref.repeat}+{task.earlier_replies}" if task.earlier_replies else task.ref.repeat

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The cached generations for this request, or None."""
        # fetchall ends the read at once: a read left open would make the next write on this
        # connection fail with "database is locked" when another process wrote in between
        rows = self._connect().execute(
            "SELECT value FROM responses WHERE key = ?", (cache_key(prompt, llm_string, self._repeat()),)
        ).fetchall()
        with self._lock:
            if not rows:
                self.misses += 1
                return None
            self.hits += 1
        generations = []
        for stored in json.loads(rows[0][0]):
            (message,) = messages_from_dict([stored["message"]])
            message.response_metadata = {**message.response_metadata, "cache_hit": True}
            generations.append(ChatGeneration(message=message, generation_info=stored["generation_info"]))
        return generations

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store the generations for this request (the first writer wins); a reply that is no answer (none,
        or a stream cut short) is not kept."""
        if not storable(return_val):
            return
        self._connect().execute(
            "INSERT OR IGNORE INTO responses (key, llm, value) VALUES (?, ?, ?)",
            (cache_key(prompt, llm_string, self._repeat()), model_label(llm_string), _encode(return_val)),
        )

    def clear(self, **kwargs: Any) -> None:
        """Remove every entry."""
        self._connect().execute("DELETE FROM responses")

    def entries(self) -> int:
        """How many responses are stored."""
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchall()[0][0]
