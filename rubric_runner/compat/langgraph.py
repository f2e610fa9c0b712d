"""What rubric_runner takes from LangGraph's checkpointers beyond their public API, in one place.

A finished thread is cut to its latest state (``loop.checkpoints``): a new checkpoint holds the delta
channels' values whole, as LangGraph's own snapshots do, and the rest of the thread is deleted where
LangGraph offers no call for it (the SQLite and PostgreSQL savers' tables). An in-memory thread is deleted whole
once its task ends (the saver's dicts): no one reads it again. Each assumption is pinned by
``tests/compat/test_langgraph.py``.

A graph that a task calls (a subagent, through the ``task`` tool of a LangChain agent's ``tools`` node)
keeps its own checkpoints, under the namespace ``<node>:<task id>``, and a task run again goes on from
them; the caller's graph reads that state with its own channels (``called_graph``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot

__all__ = ["DeltaChannel", "snapshot", "uuid6"]

TOOL_NODE = "tools"
"""The node of a LangChain agent that runs its tool calls, a task each."""


def called_graph(config: dict[str, Any], task: Any) -> dict[str, Any]:
    """The config that reads, with ``aget_state``, the state of the graph that ``task`` (a ``StateSnapshot``'s
    task on the thread of ``config``) called, as that graph last saved it."""
    from langgraph._internal._constants import NS_END

    return {"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": f"{task.name}{NS_END}{task.id}"}}


def snapshot(value: Any) -> Any:
    """A delta channel's whole value, as a checkpoint holds it after a snapshot."""
    return _DeltaSnapshot(value)


class RunMemorySaver(InMemorySaver):
    """``InMemorySaver`` that remembers which blobs each thread wrote, so ``drop_thread`` deletes one thread
    without a walk over every thread's blobs (as ``delete_thread`` makes)."""

    def __init__(self) -> None:
        super().__init__()
        self.thread_blobs: dict[str, list[tuple[str, str, str, Any]]] = {}

    def put(self, config, checkpoint, metadata, new_versions):
        thread_id, namespace = config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]
        self.thread_blobs.setdefault(thread_id, []).extend((thread_id, namespace, channel, version)
                                                           for channel, version in new_versions.items())
        return super().put(config, checkpoint, metadata, new_versions)

    def drop_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints, their writes and its blobs."""
        for namespace, checkpoints in self.storage.pop(thread_id, {}).items():
            for checkpoint_id in checkpoints:
                self.writes.pop((thread_id, namespace, checkpoint_id), None)
        for key in self.thread_blobs.pop(thread_id, ()):
            self.blobs.pop(key, None)


def drop_sqlite_thread_but(saver: Any, thread_id: str, checkpoint_id: str) -> None:
    """Delete a SQLite thread's checkpoints and writes other than checkpoint ``checkpoint_id``'s, in one
    transaction (the saver keeps its blobs inside the checkpoint rows)."""
    kept = (thread_id, checkpoint_id)
    with saver.cursor() as cur:
        for table in ("checkpoints", "writes"):
            cur.execute(f"DELETE FROM {table} WHERE thread_id = ? AND NOT (checkpoint_ns = '' AND checkpoint_id = ?)", kept)


async def drop_postgres_thread_but(saver: Any, thread_id: str, checkpoint_id: str, versions: Mapping[str, Any]) -> None:
    """The same for a PostgreSQL thread: one transaction, on the saver's own connection."""
    kept = (thread_id, checkpoint_id)
    async with saver._cursor() as cur, cur.connection.transaction():
        for table in ("checkpoints", "checkpoint_writes"):
            await cur.execute(f"DELETE FROM {table} WHERE thread_id = %s AND NOT (checkpoint_ns = '' AND checkpoint_id = %s)", kept)
        await cur.execute("DELETE FROM checkpoint_blobs WHERE thread_id = %s AND (checkpoint_ns <> ''"
                          " OR version IS DISTINCT FROM (%s::jsonb ->> channel))", (thread_id, json.dumps(versions)))
