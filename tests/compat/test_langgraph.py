"""Each assumption ``rubric_runner.compat.langgraph`` makes, pinned by name (see ``rubric_runner/compat/langgraph.py``):
LangGraph: ``InMemorySaver``'s dicts, its snapshot type, the Postgres saver's cursor."""

from __future__ import annotations

import pytest

from rubric_runner.compat import langgraph as compat_langgraph


def test_langgraph_in_memory_saver_keeps_threads_in_three_dicts(loop):
    saver = compat_langgraph.InMemorySaver()
    assert all(isinstance(getattr(saver, name), dict) for name in ("storage", "blobs", "writes"))
    snapshot = compat_langgraph.snapshot(["a"])
    assert snapshot.value == ["a"]  # LangGraph's own snapshot type, as a delta channel's checkpoint holds it


def test_langgraph_postgres_saver_has_a_cursor():
    postgres = pytest.importorskip("langgraph.checkpoint.postgres.aio")
    assert callable(getattr(postgres.AsyncPostgresSaver, "_cursor", None))
