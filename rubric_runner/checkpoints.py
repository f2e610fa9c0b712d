"""A SQLite checkpointer for asyncio runs that writes on the event loop's own thread."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver


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
