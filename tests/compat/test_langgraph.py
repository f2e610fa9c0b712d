"""Each assumption ``rubric_runner.compat.langgraph`` makes, pinned by name (see ``rubric_runner/compat/langgraph.py``):
LangGraph: ``InMemorySaver``'s dicts and keys, its snapshot type, the SQLite saver's tables, the Postgres saver's cursor;
and a saver's serializer kept through its allowlist copy (``loop.seed_refs``)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from rubric_runner.compat import langgraph as compat_langgraph


class Steps(TypedDict):
    steps: Annotated[list, operator.add]


def _two_steps(checkpointer):
    """A graph of two steps, ``one`` then ``two``, each adding its name to ``steps``."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(Steps)
    graph.add_node("one", lambda state: {"steps": ["one"]})
    graph.add_node("two", lambda state: {"steps": ["two"]})
    graph.add_edge(START, "one")
    graph.add_edge("one", "two")
    graph.add_edge("two", END)
    return graph.compile(checkpointer=checkpointer)


def test_langgraph_in_memory_saver_keeps_threads_in_three_dicts(loop):
    saver = compat_langgraph.InMemorySaver()
    assert all(isinstance(getattr(saver, name), dict) for name in ("storage", "blobs", "writes"))
    snapshot = compat_langgraph.snapshot(["a"])
    assert snapshot.value == ["a"]  # LangGraph's own snapshot type, as a delta channel's checkpoint holds it


def test_langgraph_in_memory_saver_keys_blobs_by_put_versions_and_writes_by_checkpoint():
    """``RunMemorySaver.drop_thread`` finds a thread's blobs from the versions each ``put`` was given, and its
    writes under each of its checkpoints' ids: every entry the saver holds is one of those."""
    saver = compat_langgraph.RunMemorySaver()
    agent = _two_steps(saver)
    for thread in ("t", "u"):
        asyncio.run(agent.ainvoke({"steps": []}, {"configurable": {"thread_id": thread}}, durability="sync"))
    assert saver.blobs and saver.writes
    assert set(saver.blobs) <= {key for keys in saver.thread_blobs.values() for key in keys}
    held = {(thread, namespace, checkpoint_id) for thread, namespaces in saver.storage.items()
            for namespace, checkpoints in namespaces.items() for checkpoint_id in checkpoints}
    assert set(saver.writes) <= held


def test_langgraph_sqlite_saver_keeps_a_thread_in_two_tables(tmp_path):
    """``drop_sqlite_thread_but`` deletes from ``checkpoints`` and ``writes``: a thread's rows are there and
    nowhere else, and after it only the kept checkpoint (and its writes) is left of the thread."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        agent = _two_steps(saver)
        for thread in ("t", "u"):
            agent.invoke({"steps": []}, {"configurable": {"thread_id": thread}}, durability="sync")
        latest = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        compat_langgraph.drop_sqlite_thread_but(saver, "t", latest.checkpoint["id"])
    db = sqlite3.connect(tmp_path / "c.sqlite")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"checkpoints", "writes"}
    kept = {row for row in db.execute("SELECT DISTINCT checkpoint_id FROM checkpoints WHERE thread_id = 't'")}
    assert kept == {(latest.checkpoint["id"],)}
    assert db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'u'").fetchone()[0] > 1
    assert {row[0] for row in db.execute("SELECT DISTINCT checkpoint_id FROM writes WHERE thread_id = 't'")} <= {latest.checkpoint["id"]}


@pytest.mark.parametrize("strict", [False, True])
def test_langgraph_saver_made_for_an_allowlist_keeps_its_serializer_class(tmp_path, monkeypatch, strict):
    """``loop.seed_refs.SeedRefs`` is a ``JsonPlusSerializer``: the saver a compiled graph makes for the graph's
    msgpack allowlist (``with_allowlist``; a copy of the serializer under ``LANGGRAPH_STRICT_MSGPACK``) must
    keep it one, with its run dir."""
    import sqlite3

    from langgraph.checkpoint.serde import _msgpack
    from langgraph.checkpoint.sqlite import SqliteSaver

    from rubric_runner.loop.seed_refs import SeedRefs

    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", strict)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False), serde=SeedRefs(tmp_path))
    copied = saver.with_allowlist({("some_module", "SomeState")}).serde
    assert type(copied) is SeedRefs and copied.home == tmp_path and (copied is not saver.serde) == strict


def test_langgraph_postgres_saver_has_a_cursor():
    postgres = pytest.importorskip("langgraph.checkpoint.postgres.aio")
    assert callable(getattr(postgres.AsyncPostgresSaver, "_cursor", None))


def test_langgraph_values_stream_ends_with_the_threads_state():
    """A task takes its state from the last chunk of its ``values`` stream (``loop.task``), not from a read of
    the thread after it: both must be the same, a deep agent's private loop keys included."""
    from deepagents import create_deep_agent
    from support.helpers import verdict

    from rubric_runner.compat import deepagents as compat_deepagents
    from rubric_runner.models.scripted import ScriptedChatModel

    toy = _two_steps(compat_langgraph.InMemorySaver())
    grader = ScriptedChatModel(model="scripted:g", turns=[verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])
    worker = ScriptedChatModel(model="scripted:w", turns=[{"content": "draft"}, {"content": "final"}])
    deep = create_deep_agent(model=worker, middleware=[compat_deepagents.rubric_middleware(model=grader, max_iterations=3)],
                             checkpointer=compat_langgraph.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def last_chunk(agent, given):
        chunks = [chunk async for chunk in agent.astream(given, config, stream_mode="values", durability="sync")]
        return chunks[-1], (await agent.aget_state(config)).values

    streamed, read = asyncio.run(last_chunk(toy, {"steps": []}))
    assert streamed == read == {"steps": ["one", "two"]}
    streamed, read = asyncio.run(last_chunk(deep, {"messages": [{"role": "user", "content": "Write it."}], "rubric": "- c"}))
    assert streamed == read
    assert (compat_deepagents.LoopState.of(streamed).status, streamed["messages"][-1].content) == ("satisfied", "final")


def test_langgraph_a_graph_a_task_called_keeps_its_state_under_the_tasks_namespace_and_goes_on_from_it():
    """A graph called inside a task (a subagent, by the ``task`` tool of a LangChain agent's ``tools`` node)
    saves its steps under the namespace ``called_graph`` names, which the caller reads with its own channels;
    the task run again on a resume goes on from there, its finished steps not run again."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langgraph.graph import START, StateGraph

    from rubric_runner.models.scripted import ScriptedChatModel

    @tool
    def noop() -> str:
        """Do nothing."""
        return ""

    assert compat_langgraph.TOOL_NODE in create_agent(ScriptedChatModel(model="scripted:w", turns=[]), tools=[noop]).nodes
    ran: list[str] = []

    def first(state):
        ran.append("first")
        return {"steps": ["first"]}

    def second(state):
        ran.append("second")
        if ran.count("second") == 1:
            raise RuntimeError("killed")
        return {"steps": ["second"]}

    inner = StateGraph(Steps)
    inner.add_node("first", first)
    inner.add_node("second", second)
    inner.add_edge(START, "first")
    inner.add_edge("first", "second")
    called = inner.compile()
    outer = StateGraph(Steps)
    outer.add_node(compat_langgraph.TOOL_NODE, lambda state: {"steps": called.invoke({"steps": []})["steps"]})
    outer.add_edge(START, compat_langgraph.TOOL_NODE)
    agent = outer.compile(checkpointer=compat_langgraph.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="killed"):
        agent.invoke({"steps": []}, config, durability="sync")
    (task,) = agent.get_state(config).tasks
    assert (task.name, task.result) == (compat_langgraph.TOOL_NODE, None)
    assert agent.get_state(compat_langgraph.called_graph(config, task)).values == {"steps": ["first"]}
    assert asyncio.run(agent.ainvoke(None, config, durability="sync")) == {"steps": ["first", "second"]}
    assert ran == ["first", "second", "second"]
