"""A plan's tasks, run: at most ``run.concurrency`` at once, each kept as it ends, none held.

On a resume, a task that ended with a verdict (or by its limit) is kept as it is; an interrupted or
failed one continues from its thread's checkpoints; one a budget kept from starting starts afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..config.schema import Checkpointer
from ..config.validate import postgres_url
from ..context import TaskRef
from ..environment import tasks_running
from ..plugins.events import TaskEnded
from ..records import (
    CHECKPOINT_FILE,
    EVENTS_FILE,
    RESULT_FILE,
    SCHEMA_VERSION,
    RunRecord,
    Status,
    TaskRecord,
    TaskTally,
    Usage,
    move_task_files,
    read_task,
    write_record,
)
from ..redaction import scrub_sqlite
from .agent import build_agent
from .budgets import Budgets
from .cells import Cell
from .plan import Plan
from .task import Shared, TaskRun
from .workspaces import WORKSPACE_DIR

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import DictRow

POSTGRES_SETUP_LOCK = 0x7275_6272
"""The advisory lock that serializes the checkpoint tables' set-up between runs sharing a database."""


@contextlib.asynccontextmanager
async def checkpointer(plan: Plan) -> AsyncIterator[Any]:
    """The run's checkpointer: SQLite in the thread's home dir (WAL; no fsync per step; a workspace task's seed
    files named, not held: ``SeedRefs``), memory, or PostgreSQL."""
    run = plan.config.run
    if run.checkpointer == Checkpointer.memory:
        from ..compat.langgraph import RunMemorySaver

        yield RunMemorySaver()
        return
    if run.checkpointer == Checkpointer.postgres:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        url = postgres_url(run.checkpoint_url)
        assert url is not None, "validate() refuses run.checkpointer=postgres without a database"
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            # from_conn_string's saver holds one connection (its conn is typed as a connection or a pool)
            conn = cast("AsyncConnection[DictRow]", saver.conn)
            # setup() creates or migrates the tables; runs starting at once take turns. The lock is
            # polled, not awaited: a session blocked in pg_advisory_lock holds a transaction open,
            # and setup()'s CREATE INDEX CONCURRENTLY waits for every open transaction: a deadlock.
            while True:
                row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (POSTGRES_SETUP_LOCK,))).fetchone()
                if row is not None and row["locked"]:
                    break
                await asyncio.sleep(0.05)
            try:
                await saver.setup()
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (POSTGRES_SETUP_LOCK,))
            yield saver
        return
    import sqlite3

    from .checkpoints import InlineSqliteSaver
    from .seed_refs import SeedRefs

    path = plan.home / CHECKPOINT_FILE
    try:
        with contextlib.closing(sqlite3.connect(path, check_same_thread=False)) as connection:
            connection.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes on a new file: pages freed can be given back
            connection.execute("PRAGMA synchronous=NORMAL")
            yield InlineSqliteSaver(connection, serde=SeedRefs(plan.home))
            connection.executescript("PRAGMA incremental_vacuum;")  # gives back the pages cut threads freed
    finally:
        scrub_sqlite(path)


def logged_usage(events: Path) -> dict[tuple[str | None, int | None], dict[str, Usage]]:
    """The model calls each task logged in ``events`` (its ``token_usage`` events, every process's), counted
    by (task id, repeat): a task of the rubric's own message logs no id, a version 1 or 2 run of one task neither."""
    usage: dict[tuple[str | None, int | None], dict[str, Usage]] = {}
    with contextlib.suppress(FileNotFoundError), open(events, encoding="utf-8") as lines:
        for line in lines:
            if '"token_usage"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:  # the last line of a process that was killed
                continue
            if event.get("event") != "token_usage":
                continue
            counts = usage.setdefault((event.get("task_id"), event.get("repeat")), {"worker": Usage(), "grader": Usage()})
            counts.setdefault(event["agent"], Usage()).add(event, cached=bool(event.get("cache_hit")))
    return usage


def move_inline_task(plan: Plan, inline: TaskRecord) -> Path | None:
    """Lay out the task that a version 1 or 2 run of one task kept in its run's file as version 3 does: its
    files (transcript, kept workspaces, follow-up turns) moved from the run dir into its task dir, and its
    record written there (unless an earlier resume did). The task dir; None when the inline task is none of
    the plan's."""
    target = next((cell.dir for cell in plan.cells
                   if (inline.repeat or 0) == cell.repeat and inline.task_id in (None, cell.task.id)), None)
    if target is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    move_task_files(plan.run_dir, target, (WORKSPACE_DIR,))
    if not (target / RESULT_FILE).exists():
        write_record(target / RESULT_FILE, inline.model_copy(update={"run_dir": str(target), "schema_version": SCHEMA_VERSION}))
    return target


class TaskSet:
    """The run of a plan's tasks: each task x repeat in turn as a worker is free, its record counted as it
    ends (``tally``)."""

    def __init__(self, plan: Plan, record: RunRecord, budgets: Budgets, log: Any, console: Any, stop: Any,
                 ended: Callable[[TaskEnded], None]) -> None:
        self.plan, self.record, self.budgets = plan, record, budgets
        self.log, self.console, self.stop, self.ended = log, console, stop, ended
        self.shared: Shared | None = None
        self.tally = TaskTally(0)
        self.reused = 0
        """How many tasks were kept as they were: complete in the run before."""
        self.logged: dict[tuple[str | None, int | None], dict[str, Usage]] | None = None
        """The usage in the run's events, read when a task whose process died is resumed."""
        self.done = self.satisfied = self.tokens = 0

    def previous(self, cell: Cell) -> TaskRecord | None:
        """A cell's record of the run before, if any; what it spent counts against the budgets. A task whose
        process died (its record still says running) spent what its model calls logged."""
        previous = read_task(cell.dir / RESULT_FILE)
        if previous is not None and previous.status is Status.RUNNING:
            if self.logged is None:
                self.logged = logged_usage(self.plan.run_dir / EVENTS_FILE)
            previous.usage = self.logged.get((previous.task_id, previous.repeat), previous.usage)
        if previous is not None:
            self.budgets.book(previous, cell.dir)
        return previous

    async def run(self, resume: bool) -> None:
        """Run every task and repeat, at most ``run.concurrency`` at once; each task counts into ``tally``
        as it ends and is let go (its asyncio task with it, and the context it set)."""
        plan = self.plan
        async with checkpointer(plan) as saver:
            shared = self.shared = Shared(plan, self.record, build_agent(plan, saver), saver, self.budgets, self.log,
                                          self.console, self.stop)
            self.tally = TaskTally(len(plan.cells))
            pending = []
            for index, cell in enumerate(plan.cells):
                previous = self.previous(cell) if resume else None
                if previous is not None and previous.status is not Status.NOT_RUN and previous.status.terminal:
                    self.reused += 1
                    self._end(index, cell, previous, reused=True)  # complete: kept as it is
                else:  # a task the budget kept from starting starts afresh
                    kept = None if previous is None or previous.status is Status.NOT_RUN else previous
                    pending.append((index, cell, kept))
            work = iter(pending)

            async def worker() -> None:
                for index, cell, previous in work:
                    record = await asyncio.create_task(TaskRun(shared, cell, previous)())
                    self._end(index, cell, record)

            with tasks_running():
                workers = [asyncio.ensure_future(worker()) for _ in range(min(plan.config.run.concurrency, len(pending)))]
                try:
                    await asyncio.gather(*workers)
                except BaseException:  # what ends the run (no room to record) stops the tasks still going
                    for running in workers:
                        running.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)
                    raise

    def _end(self, index: int, cell: Cell, record: TaskRecord, reused: bool = False) -> None:
        """A task is done (``reused``: complete in the run before): count it, tell the progress line and the hooks."""
        self.tally.add(index, record, reused)
        self.done += 1
        self.satisfied += record.status is Status.SATISFIED
        self.tokens += record.tokens()
        if not self.plan.watched():
            self.console.progress(self.done, len(self.tally.rows), self.satisfied, self.tokens, self.budgets.progress())
        ref = TaskRef(cell.task.id, cell.repeat, str(cell.dir), record.thread_id)
        self.ended(TaskEnded(record, ref, self.record.header, str(self.plan.run_dir), self.done, len(self.tally.rows)))

    def interrupt_all(self, reason: str) -> list[TaskRecord]:
        """Record every task in flight as interrupted (used when stopping at once)."""
        interrupted: list[TaskRecord] = []
        if self.shared is None:
            return interrupted
        for record, end in list(self.shared.active.values()):
            record.interrupt(reason)
            end()
            interrupted.append(record)
        self.shared.active.clear()
        return interrupted

