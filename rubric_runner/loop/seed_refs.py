"""Checkpoints that name a workspace task's seed files instead of holding them.

A workspace task's files live in its thread's state, so every checkpoint or write that holds them would
keep the whole seed again, for every task. ``SeedRefs`` stores such bytes as pieces: the bytes around each
seed file they hold, and the file's place in the seed kept in the checkpoints' run dir
(``seeds/<sha256>.json``), under the type LangGraph gave them with ``+seeds`` added; reading them back puts
the files in place again, so LangGraph reads the very bytes it wrote. Bytes that hold no seed file are
stored as LangGraph's own serializer stores them, which any SQLite saver reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..context import current_task
from .workspaces import keep_seed, seed_path

SEEDED = "+seeds"
"""Added to the type of bytes stored as pieces that name seed files."""
MIN_FILE_BYTES = 256
"""A seed file shorter than this is left in place: naming it would save little."""
HEAD_BYTES = 64
"""A file is looked for by its first bytes, then compared whole where they are."""


def seed_bytes(files: Mapping[str, str]) -> list[bytes]:
    """A seed's files as the bytes a serialized state holds them in, in the seed's path order."""
    return [text.encode() for _, text in sorted(files.items())]


def _find(data: bytes, text: bytes, start: int) -> int:
    """Where ``text`` is in ``data`` from ``start`` on; -1 if it is not."""
    head = text[:HEAD_BYTES]
    at = data.find(head, start)
    while at != -1 and not data.startswith(text, at):
        at = data.find(head, at + 1)
    return at


def pieces(data: bytes, files: list[bytes]) -> list[bytes | int] | None:
    """``data`` as the bytes between the seed files it holds and each file's index in ``files``; None when it
    holds none. A file is looked for once, first where the one before ended (a state holds them in order)."""
    found, start = [], 0
    for index, text in enumerate(files):
        if MIN_FILE_BYTES <= len(text) <= len(data):
            at = _find(data, text, start)
            if at == -1 and start:
                at = _find(data, text, 0)
            if at != -1:
                found.append((at, -len(text), index))
                start = at + len(text)
    if not found:
        return None
    parts: list[bytes | int] = []
    end = 0
    for at, _, index in sorted(found):
        if at >= end:  # not inside a file already named
            parts += [data[end:at], index]
            end = at + len(files[index])
    parts.append(data[end:])
    return parts


class SeedRefs(JsonPlusSerializer):
    """LangGraph's serializer (a copy made for a graph's msgpack allowlist is one too), with the seed files in
    its bytes named by their place in the seed of the task at hand, which is kept in ``home``'s ``seeds/``
    before any bytes name it."""

    def __init__(self, home: Path) -> None:
        super().__init__()
        self.home = home
        self.kept: set[str] = set()
        self.last: tuple[str, list[bytes]] | None = None

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.named(*super().dumps_typed(obj))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return super().loads_typed(self.restored(*data))

    def named(self, kind: str, data: bytes) -> tuple[str, bytes]:
        """Serialized bytes with the seed files they hold named, if they hold any of the task at hand's."""
        task = current_task()
        workspace = task.workspace if task is not None else None
        if workspace is None or len(data) < MIN_FILE_BYTES:
            return kind, data
        parts = pieces(data, self._seed(workspace.digest, workspace.files))
        if parts is None:
            return kind, data
        if workspace.digest not in self.kept:
            keep_seed(self.home, workspace)
            self.kept.add(workspace.digest)
        return kind + SEEDED, ormsgpack.packb([workspace.digest, parts])

    def restored(self, kind: str, data: bytes) -> tuple[str, bytes]:
        """What ``named`` was given back."""
        if not kind.endswith(SEEDED):
            return kind, data
        digest, parts = ormsgpack.unpackb(data)
        task = current_task()
        workspace = task.workspace if task is not None else None
        files = self._seed(digest, workspace.files if workspace is not None and workspace.digest == digest else None)
        return kind.removesuffix(SEEDED), b"".join(files[part] if isinstance(part, int) else part for part in parts)

    def _seed(self, digest: str, files: Mapping[str, str] | None) -> list[bytes]:
        """``seed_bytes`` of the seed of that digest (``files``, or else the one kept in ``home``); the last one
        asked for is remembered."""
        last = self.last  # read once: another thread may remember another seed meanwhile
        if last is None or last[0] != digest:
            if files is None:
                files = json.loads(seed_path(self.home, digest).read_text(encoding="utf-8"))
            last = self.last = digest, seed_bytes(files)
        return last[1]
