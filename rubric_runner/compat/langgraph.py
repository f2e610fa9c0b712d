"""What rubric_runner takes from LangGraph's checkpointers beyond their public API, in one place.

A finished thread is cut to its latest state (``loop.checkpoints``): a new checkpoint holds the delta
channels' values whole, as LangGraph's own snapshots do, and the rest of the thread is deleted where
LangGraph offers no call for it (the in-memory saver's dicts, the PostgreSQL saver's cursor). Each
assumption is pinned by ``tests/compat/test_langgraph.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot

__all__ = ["DeltaChannel", "InMemorySaver", "snapshot", "uuid6"]


def snapshot(value: Any) -> Any:
    """A delta channel's whole value, as a checkpoint holds it after a snapshot."""
    return _DeltaSnapshot(value)


def drop_memory_thread_but(saver: InMemorySaver, thread_id: str, checkpoint_id: str, versions: Mapping[str, Any]) -> None:
    """Delete what an in-memory thread holds beyond checkpoint ``checkpoint_id``: its other checkpoints,
    their writes, and the blobs no kept version names (only this thread's entries are walked)."""
    for namespace, checkpoints in saver.storage.get(thread_id, {}).items():
        for dropped_id in [kept_id for kept_id in checkpoints if (namespace, kept_id) != ("", checkpoint_id)]:
            for channel, version in saver.serde.loads_typed(checkpoints.pop(dropped_id)[0])["channel_versions"].items():
                if namespace != "" or versions.get(channel) != version:
                    saver.blobs.pop((thread_id, namespace, channel, version), None)
            saver.writes.pop((thread_id, namespace, dropped_id), None)


async def drop_postgres_thread_but(saver: Any, thread_id: str, checkpoint_id: str, versions: Mapping[str, Any]) -> None:
    """The same for a PostgreSQL thread: one transaction, on the saver's own connection."""
    kept = (thread_id, checkpoint_id)
    async with saver._cursor() as cur, cur.connection.transaction():
        for table in ("checkpoints", "checkpoint_writes"):
            await cur.execute(f"DELETE FROM {table} WHERE thread_id = %s AND NOT (checkpoint_ns = '' AND checkpoint_id = %s)", kept)
        await cur.execute("DELETE FROM checkpoint_blobs WHERE thread_id = %s AND (checkpoint_ns <> ''"
                          " OR version IS DISTINCT FROM (%s::jsonb ->> channel))", (thread_id, json.dumps(versions)))
