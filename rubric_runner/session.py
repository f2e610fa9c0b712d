"""A run's shared machinery (one agent, tools, cache, checkpointer) and each task's lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog

from .config import Config, postgres_url
from .console import Console
from .context import CURRENT_TASK, TaskContext
from .dataset import Task
from .models import explain_error, is_provider_error, is_scripted
from .runtime import frozen_heap, no_thread_hops_without_tracing
from .runlog import EXIT_CODES, TERMINAL_STATUSES, RunResult, read_result, scrub_sqlite, write_json, write_result

RESULT_FILE = "result.json"
EVENTS_FILE = "events.jsonl"
TRANSCRIPT_FILE = "transcript.json"
CHECKPOINT_FILE = "checkpoints.sqlite"
POSTGRES_SETUP_LOCK = 0x7275_6272
"""The advisory lock that serializes the checkpoint tables' set-up between runs sharing a database."""


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def complete(result: RunResult, started: float) -> None:
    """How every record ends: exit code, end and wall time, and a grader_error's cause as ``error``."""
    result.exit_code = EXIT_CODES.get(result.status, 3)
    result.ended_at = now()
    result.wall_seconds = round(time.monotonic() - started, 3)
    if result.status == "grader_error" and result.evaluations and not result.error:
        result.error = {"type": "GraderError", "message": result.evaluations[-1].get("explanation", "")}


class StopRequested(Exception):
    """Raised inside a task at a checkpoint after SIGINT/SIGTERM asked the run to stop."""


class StopRequest:
    """SIGINT/SIGTERM handling for a run.

    The first signal asks every task to stop at its next checkpoint, so no
    finished step is lost. A second one calls ``stop_now`` (which records the
    run as interrupted) and exits with 130 at once; steps in flight are redone
    on resume.
    """

    def __init__(self, console: Console, stop_now: Callable[[str], None]) -> None:
        self.console = console
        self.stop_now = stop_now
        self.signal_name: str | None = None

    def __call__(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.signal_name is not None:
            self.stop_now(f"{name} twice: stopped without waiting for a checkpoint")
            os._exit(EXIT_CODES["interrupted"])
        self.signal_name = name
        self.console.line(f"{name}: stopping at the next checkpoint (send it again to stop at once)")

    def check(self) -> None:
        """Raise StopRequested if a stop was asked for."""
        if self.signal_name is not None:
            raise StopRequested(f"{self.signal_name}: stopped at a checkpoint")

    @contextlib.contextmanager
    def installed(self):
        """Handle SIGINT and SIGTERM for the length of a run (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {signum: signal.signal(signum, self) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def describe(config: Config, result: RunResult) -> None:
    """Copy what ran (models, tools, rubric) into a record."""
    for role in ("worker", "grader"):
        node = getattr(config, role)
        getattr(result, role).update(model=node.model, scripted=is_scripted(node), tools=sorted(node.tools))
    grader = config.grader
    result.grader.update(
        max_iterations=grader.max_iterations,
        max_model_calls=grader.max_model_calls,
        structured_output=grader.structured_output,
    )
    result.rubric.update(name=config.rubric.name, text=config.rubric.text, task=config.rubric.task)
    result.tags = list(config.tags)


def _final_answer(messages: list[Any]) -> str | None:
    from langchain_core.messages import AIMessage

    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message.text
    return None


class Session:
    """Everything one run shares between its tasks, and how each task is run and recorded."""

    def __init__(self, config: Config, run_dir: Path, log: Any, console: Console, overrides: list[str], multi: bool) -> None:
        self.config = config
        self.run_dir = run_dir
        self.log = log
        self.console = console
        self.overrides = overrides
        self.multi = multi
        self.stop: StopRequest | None = None
        self.agent: Any = None
        self.active: dict[str, tuple[RunResult, Callable[[], None]]] = {}
        self.reused: set[str] = set()
        self.finished: list[RunResult] = []
        self.total = 0
        self.grader: dict[str, Any] = {"strategy": config.grader.structured_output}
        """How the grader answers (``Shared.grader_record``), copied into every task's record."""

    def task_dir(self, task: Task, repeat: int) -> Path:
        """Where a task's record goes: the run dir itself for a single-task run."""
        return self.run_dir / "tasks" / f"{task.id}-r{repeat}" if self.multi else self.run_dir

    def on_evaluation(self, evaluation: dict[str, Any]) -> None:
        """``RubricMiddleware(on_evaluation=...)``: route to the recorder of the task at hand."""
        task = CURRENT_TASK.get()
        if task is not None and task.grading is not None:
            task.grading.annotate(evaluation)
        if task is not None and task.recorder is not None:
            task.recorder.on_evaluation(evaluation)

    @contextlib.asynccontextmanager
    async def _checkpointer(self):
        """The run's checkpointer: SQLite in the run dir (WAL; no fsync per step), memory, or PostgreSQL."""
        if self.config.run.checkpointer == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            yield InMemorySaver()
            return
        if self.config.run.checkpointer == "postgres":
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

            async with AsyncPostgresSaver.from_conn_string(postgres_url(self.config.run.checkpoint_url)) as saver:
                # setup() creates or migrates the tables; runs starting at once take turns. The lock is
                # polled, not awaited: a session blocked in pg_advisory_lock holds a transaction open,
                # and setup()'s CREATE INDEX CONCURRENTLY waits for every open transaction: a deadlock.
                while not (await (await saver.conn.execute(
                    "SELECT pg_try_advisory_lock(%s) AS locked", (POSTGRES_SETUP_LOCK,)
                )).fetchone())["locked"]:
                    await asyncio.sleep(0.05)
                try:
                    await saver.setup()
                finally:
                    await saver.conn.execute("SELECT pg_advisory_unlock(%s)", (POSTGRES_SETUP_LOCK,))
                yield saver
            return
        import sqlite3

        from .checkpoints import InlineSqliteSaver

        path = self.run_dir / CHECKPOINT_FILE
        try:
            with contextlib.closing(sqlite3.connect(path, check_same_thread=False)) as connection:
                connection.execute("PRAGMA synchronous=NORMAL")
                yield InlineSqliteSaver(connection)
        finally:
            scrub_sqlite(path)

    async def run_tasks(self, tasks: list[Task], build_agent: Callable[[Any], Any]) -> list[RunResult]:
        """Run every task and repeat, at most ``run.concurrency`` at once."""
        async with self._checkpointer() as saver:
            self.agent = build_agent(saver)
            limit = asyncio.Semaphore(self.config.run.concurrency)

            async def bounded(task: Task, repeat: int) -> RunResult:
                async with limit:
                    return await self.run_task(task, repeat)

            jobs = [bounded(task, repeat) for task in tasks for repeat in range(self.config.run.repeats)]
            self.total = len(jobs)
            with frozen_heap(), no_thread_hops_without_tracing():
                return list(await asyncio.gather(*jobs))

    async def run_task(self, task: Task, repeat: int) -> RunResult:
        """One task's rubric loop, start to record; its errors stay its own."""
        task_dir = self.task_dir(task, repeat)
        task_dir.mkdir(parents=True, exist_ok=True)
        key = f"{task.id}-r{repeat}"
        previous = read_result(task_dir / RESULT_FILE) if self.config.run.resume else None
        if previous is not None and previous.status in TERMINAL_STATUSES:
            self.reused.add(key)
            self._done(previous)
            return previous
        result = RunResult(overrides=self.overrides, run_dir=str(task_dir), started_at=now())
        describe(self.config, result)
        result.grader.update(self.grader)
        result.rubric.update(text=task.rubric, task=task.message)
        if self.multi:
            result.task_id, result.repeat = task.id, repeat
        if previous is not None:
            result.evaluations, result.usage = previous.evaluations, previous.usage
            result.resumed, result.thread_id = previous.resumed + 1, previous.thread_id
        base_thread = self.config.run.thread_id
        result.thread_id = result.thread_id or (f"{base_thread}:{key}" if base_thread and self.multi else base_thread) or uuid.uuid4().hex
        started = time.monotonic()
        log = self.log
        if self.multi:  # this coroutine runs in its own asyncio task, so the binding stays its own
            structlog.contextvars.bind_contextvars(task_id=task.id, repeat=repeat)
        console = self.console if not self.multi else Console(enabled=False)

        def finish() -> None:
            complete(result, started)
            write_result(task_dir / RESULT_FILE, result)
            if self.multi:
                log.info("task_end", status=result.status, iterations=result.iterations, wall_seconds=result.wall_seconds)

        write_result(task_dir / RESULT_FILE, result)
        self.active[key] = (result, finish)
        if self.multi:
            log.info("task_start", thread_id=result.thread_id, resumed=result.resumed)
        try:
            if self.stop is not None:
                self.stop.check()
            await self._execute(task, repeat, result, task_dir, log, console)
        except StopRequested as exc:
            result.status = "interrupted"
            result.error = {"type": "KeyboardInterrupt", "message": str(exc)}
            log.warning("interrupted", reason=str(exc))
        except Exception as exc:  # one task's failure must not end the others, and leaves its record
            result.status = "error"
            message = explain_error(exc, self.config.worker, "worker") if is_provider_error(exc) else str(exc)
            result.error = {"type": type(exc).__name__, "message": message}
            log.exception("task_error" if self.multi else "run_error")
        self.active.pop(key, None)
        finish()
        self._done(result)
        return result

    def _done(self, result: RunResult) -> None:
        self.finished.append(result)
        if self.multi:
            satisfied = sum(r.status == "satisfied" for r in self.finished)
            tokens = sum(u.total_tokens for r in self.finished for u in r.usage.values())
            self.console.progress(len(self.finished), self.total, satisfied, tokens)

    async def _execute(self, task: Task, repeat: int, result: RunResult, task_dir: Path, log: Any, console: Console) -> None:
        from langchain_core.messages import HumanMessage, messages_to_dict

        from .grading import TaskGrading, final_status
        from .recorder import Recorder

        recorder = Recorder(log, result, console, self.config.run.preview_chars)
        grading = TaskGrading(self.config.grader, self.grader["strategy"], task.rubric, log, console)
        CURRENT_TASK.set(TaskContext(task.id, repeat, task.tools, recorder, grading))
        run_config = {"configurable": {"thread_id": result.thread_id}, "callbacks": [recorder]}
        agent_input: dict[str, Any] | None = {"messages": [HumanMessage(task.message)], "rubric": task.rubric}
        if result.resumed and (await self.agent.aget_state(run_config)).next:
            agent_input = None  # continue the interrupted step from the last checkpoint
            log.info("run_resumed", thread_id=result.thread_id, resumed=result.resumed)
        try:
            stream = self.agent.astream(agent_input, run_config, stream_mode=["custom", "checkpoints"], durability="sync")
            async for mode, chunk in stream:
                if mode == "custom":
                    recorder.on_stream_event(chunk)
                elif self.stop is not None:
                    self.stop.check()
        finally:
            values = (await self.agent.aget_state(run_config)).values
            messages = values.get("messages", [])
            write_json(task_dir / TRANSCRIPT_FILE, {"thread_id": result.thread_id, "messages": messages_to_dict(messages)})
            result.final_answer = _final_answer(messages)
            result.iterations = int(values.get("_rubric_iterations") or 0)
            result.status = values.get("_rubric_status") or "error"
            if values.get("_rubric_evaluations"):  # the checkpoint is the truth, also across resumes
                run_id = values.get("_current_grading_run_id")
                result.evaluations = [e for e in values["_rubric_evaluations"] if e["grading_run_id"] == run_id]
            result.status = final_status(result.status, result.evaluations, self.config.grader.strict_coverage)
        if result.status == "error":
            result.error = {"type": "NoVerdict", "message": "the grader never returned a verdict"}

    def interrupt_all(self, reason: str) -> list[RunResult]:
        """Record every task in flight as interrupted (used when stopping at once)."""
        interrupted = []
        for result, finish in list(self.active.values()):
            result.status = "interrupted"
            result.error = {"type": "KeyboardInterrupt", "message": reason}
            finish()
            interrupted.append(result)
        self.active.clear()
        return interrupted


def usage_dict(result: RunResult) -> dict[str, Any]:
    """The record's usage as plain dicts."""
    return {role: asdict(counts) for role, counts in result.usage.items()}
