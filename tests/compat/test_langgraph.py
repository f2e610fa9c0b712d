"""Each assumption ``rubric_runner.compat.langgraph`` makes, pinned by name (see ``rubric_runner/compat/langgraph.py``):
LangGraph: ``InMemorySaver``'s dicts, its snapshot type, the Postgres saver's cursor."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from rubric_runner.compat import langgraph as compat_langgraph


class Steps(TypedDict):
    steps: Annotated[list, operator.add]


def test_langgraph_in_memory_saver_keeps_threads_in_three_dicts(loop):
    saver = compat_langgraph.InMemorySaver()
    assert all(isinstance(getattr(saver, name), dict) for name in ("storage", "blobs", "writes"))
    snapshot = compat_langgraph.snapshot(["a"])
    assert snapshot.value == ["a"]  # LangGraph's own snapshot type, as a delta channel's checkpoint holds it


def test_langgraph_postgres_saver_has_a_cursor():
    postgres = pytest.importorskip("langgraph.checkpoint.postgres.aio")
    assert callable(getattr(postgres.AsyncPostgresSaver, "_cursor", None))


def test_langgraph_checkpoints_stream_ends_with_the_threads_state():
    """A task takes its state from the last chunk of its ``checkpoints`` stream (``loop.task``), not from a
    read of the thread after it: both must be the same."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(Steps)
    graph.add_node("one", lambda state: {"steps": ["one"]})
    graph.add_node("two", lambda state: {"steps": ["two"]})
    graph.add_edge(START, "one")
    graph.add_edge("one", "two")
    graph.add_edge("two", END)
    agent = graph.compile(checkpointer=compat_langgraph.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def last_chunk():
        chunks = [chunk async for chunk in agent.astream({"steps": []}, config, stream_mode="checkpoints", durability="sync")]
        return chunks[-1]["values"], (await agent.aget_state(config)).values

    streamed, read = asyncio.run(last_chunk())
    assert streamed == read == {"steps": ["one", "two"]}
