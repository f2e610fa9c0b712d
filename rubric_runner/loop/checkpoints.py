"""The runs' checkpointers: SQLite written on the event loop's own thread; a finished thread cut to its latest
state, or dropped whole from memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from ..compat.langgraph import (
    DeltaChannel,
    RunMemorySaver,
    drop_postgres_thread_but,
    drop_sqlite_thread_but,
    snapshot,
    uuid6,
)


class InlineSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones in place.

    A checkpoint write to a local WAL database without fsync per commit takes tens of
    microseconds: less than the thread hops ``AsyncSqliteSaver`` makes for each statement
    (cursor, execute, commit, close), which also keep the GIL from the tasks. The tables
    are the same, so either saver reads what the other wrote.
    """

    async def aget_tuple(self, config):
        return self.get_tuple(config)

    async def alist(self, config, *, filter=None, before=None, limit=None) -> AsyncIterator[Any]:
        # Read all rows first: list() holds the saver's lock while it yields, and a write
        # from another task in between would wait for it on this very thread.
        for item in list(self.list(config, filter=filter, before=before, limit=limit)):
            yield item

    async def aput(self, config, checkpoint, metadata, new_versions):
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id, task_path=""):
        return self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        return self.delete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config, channels: Sequence[str]) -> Mapping[str, Any]:
        return self.get_delta_channel_history(config=config, channels=channels)


async def trim_finished(saver: Any, graph: Any, thread_id: str, values: dict[str, Any] | None = None) -> None:
    """A finished task's thread: dropped whole from memory (an in-memory thread ends with its run, and no one
    reads it again), else cut to its latest state (``keep_latest``)."""
    if isinstance(saver, RunMemorySaver):
        saver.drop_thread(thread_id)
    else:
        await keep_latest(saver, graph, thread_id, values)


async def keep_latest(saver: Any, graph: Any, thread_id: str, values: dict[str, Any] | None = None) -> bool:
    """Cut a finished thread's checkpoints down to its latest state (``values``, when the caller has read
    them already), which stays readable and continuable.

    The messages and files of a deepagents thread are delta channels, rebuilt from the writes of
    every earlier step; so a new latest checkpoint holding them whole is saved first, then the
    thread's other checkpoints, writes and blobs are deleted. Stopped at any point, the thread
    still reads as it did. False (nothing cut) for a thread without checkpoints or whose delta
    channels are not in its state.
    """
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    latest = await saver.aget_tuple(config)
    if latest is None:
        return False
    if values is None:
        values = (await graph.aget_state(config)).values
    versions = dict(latest.checkpoint["channel_versions"])
    deltas = [name for name, channel in graph.channels.items() if isinstance(channel, DeltaChannel) and name in versions]
    if any(name not in values for name in deltas):
        return False
    bumped = {name: saver.get_next_version(versions[name], None) for name in deltas}  # a snapshot goes in a new version
    checkpoint = {**latest.checkpoint, "id": str(uuid6(clock_seq=-2)), "ts": datetime.now(UTC).isoformat(),
                  "channel_values": {**latest.checkpoint["channel_values"], **{name: snapshot(values[name]) for name in deltas}},
                  "channel_versions": {**versions, **bumped}}
    metadata = {key: value for key, value in latest.metadata.items() if key != "counters_since_delta_snapshot"}
    kept = await saver.aput(config, checkpoint, metadata, bumped)  # no parent: it will have none
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in latest.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        await saver.aput_writes(kept, writes, task_id)
    await _drop_all_but(saver, thread_id, checkpoint["id"], checkpoint["channel_versions"])
    return True


async def _drop_all_but(saver: Any, thread_id: str, checkpoint_id: str, versions: Mapping[str, Any]) -> None:
    """Delete what a thread holds beyond checkpoint ``checkpoint_id``, its writes and the blobs of its ``versions``."""
    if isinstance(saver, InlineSqliteSaver):
        drop_sqlite_thread_but(saver, thread_id, checkpoint_id)
    else:
        await drop_postgres_thread_but(saver, thread_id, checkpoint_id, versions)
