"""What keeps many concurrent tasks cheap: the inline SQLite saver, the frozen heap, no idle thread hops."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
from pathlib import Path

import pytest
from support.helpers import only_task, scripted_overrides, verdict, write_script

import rubric_runner
from rubric_runner import environment
from rubric_runner.compat.langchain import _inline_unless_tracing
from rubric_runner.loop.checkpoints import InlineSqliteSaver

OK = verdict("satisfied", ("c", True))


def _run(tmp_path: Path, script: Path, *extra: str):
    overrides = scripted_overrides(script, *extra)
    return rubric_runner.run(overrides, tmp_path / "run"), tmp_path / "run"


def test_run_checkpoints_read_back_by_langgraphs_async_sqlite_saver(tmp_path):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    script = write_script(tmp_path / "s.yaml", worker=[{"content": "answer"}], grader=[OK])
    record, run_dir = _run(tmp_path, script, "run.keep_checkpoints=all")  # every step's checkpoint, to list
    assert record.status == "satisfied"

    config = {"configurable": {"thread_id": only_task(record).thread_id, "checkpoint_ns": ""}}

    async def read() -> tuple:
        async with AsyncSqliteSaver.from_conn_string(str(run_dir / "checkpoints.sqlite")) as saver:
            history = [found.checkpoint["id"] async for found in saver.alist(config)]
            return (await saver.aget_tuple(config)).checkpoint, history

    latest, history = asyncio.run(read())
    assert latest["channel_values"]["_rubric_status"] == "satisfied"
    with sqlite3.connect(run_dir / "checkpoints.sqlite") as connection:
        inline = InlineSqliteSaver(connection)
        assert inline.get_tuple(config).checkpoint["id"] == latest["id"]
        assert [found.checkpoint["id"] for found in inline.list(config)] == history
    assert len(history) > 3


def test_inline_saver_lists_while_another_task_writes(tmp_path):
    """alist() yields between rows; a write from another task in the meantime must not wait on the lock."""
    from langgraph.checkpoint.base import empty_checkpoint

    async def main() -> int:
        with sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False) as connection:
            saver = InlineSqliteSaver(connection)
            for index in range(3):
                config = {"configurable": {"thread_id": "a", "checkpoint_ns": ""}}
                checkpoint = empty_checkpoint()
                await saver.aput(config, checkpoint, {"step": index}, {})
            seen = 0
            async for _ in saver.alist({"configurable": {"thread_id": "a"}}):
                seen += 1
                other = {"configurable": {"thread_id": f"b{seen}", "checkpoint_ns": ""}}
                await saver.aput(other, empty_checkpoint(), {}, {})
            return seen

    # a write that waits on the lock blocks its thread for good: run it in a thread of its own
    outcome: list[int] = []
    worker = threading.Thread(target=lambda: outcome.append(asyncio.run(main())), daemon=True)
    worker.start()
    worker.join(20)
    assert outcome == [3], "a write during alist() waited on the saver's lock"


def test_langsmith_work_stays_on_the_loop_unless_tracing_is_on(monkeypatch):
    calls: list[str] = []

    async def default(ctx, func, *args, **kwargs):
        calls.append("thread pool")
        return ctx.run(func, *args, **kwargs)

    async def hop(tracing: bool) -> int:
        import contextvars

        monkeypatch.setattr("langsmith.utils.tracing_is_enabled", lambda *a: tracing)
        return await _inline_unless_tracing(default, contextvars.copy_context(), lambda x: x + 1, 1)

    assert asyncio.run(hop(False)) == 2 and calls == []
    assert asyncio.run(hop(True)) == 2 and calls == ["thread pool"]


def test_a_run_sends_nothing_to_the_thread_pool_and_leaves_the_process_as_it_found_it(tmp_path, monkeypatch):
    from langsmith import _runtime_overrides
    from langsmith._internal import _aiter

    hops: list[object] = []
    real = _aiter._default_aio_to_thread

    async def counted(ctx, func, *args, **kwargs):
        hops.append(func)
        return await real(ctx, func, *args, **kwargs)

    monkeypatch.setattr(_aiter, "_default_aio_to_thread", counted)
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    with environment.process_tweaks():  # what the command line opts in to
        record, _ = _run(tmp_path, script)
    assert record.status == "satisfied"
    assert hops == []
    assert _runtime_overrides.get_runtime_overrides().aio_to_thread is None
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("checkpointer", ["sqlite", "memory"])
def test_same_records_from_either_checkpointer(tmp_path, checkpointer):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}, {"content": "y"}],
                          grader=[verdict("needs_revision", ("c", False)), OK])
    record, run_dir = _run(tmp_path, script, f"run.checkpointer={checkpointer}")
    assert (record.status, only_task(record).iterations, only_task(record).final_answer) == ("satisfied", 2, "y")
    assert (run_dir / "checkpoints.sqlite").exists() == (checkpointer == "sqlite")
