"""A run's tasks: each one's rubric loop, checkpoints and record; the checkpointer they share."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from ..config.schema import Checkpointer, Config, KeepCheckpoints
from ..config.validate import postgres_url
from ..context import CURRENT_TASK, TaskContext
from ..models.errors import explain_error, is_provider_error
from ..observe.console import Console
from ..observe.recorder import preview
from ..observe.tracing import task_trace, trace_labels
from ..records import (
    ATTEMPT_CHARS,
    CHECKPOINT_FILE,
    RESULT_FILE,
    TASKS_DIR,
    TRANSCRIPT_FILE,
    ErrorInfo,
    Evaluation,
    RunRecord,
    Status,
    TaskTally,
    Verifications,
    now,
    read_record,
    write_json,
    write_record,
)
from ..redaction import scrub_sqlite
from ..report.live import RunReports
from ..tasks.checks import GRADER_SOURCE, Check, final_answer, first_answer, verify
from ..tasks.sets import Task
from .budgets import Budgets
from .followup import FollowUp
from .limits import LimitExceeded, TaskGuard
from .runtime import tasks_running
from .signals import StopRequest, StopRequested

POSTGRES_SETUP_LOCK = 0x7275_6272
"""The advisory lock that serializes the checkpoint tables' set-up between runs sharing a database."""


def graded_attempts(messages: list[Any]) -> list[str]:
    """The worker's answer before each of the grader's revision requests, and its last one, since the
    latest user message (a follow-up turn's answers only); each cut to ``ATTEMPT_CHARS`` characters."""
    asked = [i for i, m in enumerate(messages) if getattr(m, "type", None) == "human" and getattr(m, "name", None) != GRADER_SOURCE]
    turn = messages[asked[-1] + 1:] if asked else messages
    attempts, start = [], 0
    for end, message in enumerate([*turn, None]):
        if message is None or getattr(message, "name", None) == GRADER_SOURCE:
            answer = final_answer(turn[start:end])
            if answer is not None:
                attempts.append(answer if len(answer) <= ATTEMPT_CHARS else answer[:ATTEMPT_CHARS] + "\u2026")
            start = end + 1
    return attempts


class Session:
    """How each task of a run is run and recorded; ``template`` holds what every task record shares.

    With ``follow_up``, the one task is a follow-up turn on the thread that lives in its ``home``.
    """

    def __init__(self, config: Config, run_dir: Path, log: Any, console: Console, template: RunRecord,
                 multi: bool, budgets: Budgets, stop: StopRequest | None = None,
                 follow_up: FollowUp | None = None, checks: dict[str, list[Check]] | None = None) -> None:
        self.config = config
        self.budgets = budgets
        self.run_dir = run_dir
        self.log = log
        self.console = console
        self.template = template
        self.multi = multi
        self.stop = stop
        self.follow_up = follow_up
        self.checks = checks or {}
        self.agent: Any = None
        self.saver: Any = None
        self.active: dict[str, tuple[RunRecord, Callable[[], None]]] = {}
        self.reused = 0
        """How many tasks were kept as they were: complete in the run before."""
        self.tally = TaskTally(0)
        self.single: RunRecord | None = None
        """The record of the task that ended last: a single-task run's own."""
        self.total = self.done = self.satisfied = self.tokens = 0
        self.reports: RunReports | None = None
        """A multi-task run's own reports, refreshed as its tasks end."""

    def task_dir(self, task: Task, repeat: int) -> Path:
        """Where a task's record goes: the run dir itself for a single-task run."""
        return self.run_dir / TASKS_DIR / f"{task.id}-r{repeat}" if self.multi else self.run_dir

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
        if self.config.run.checkpointer == Checkpointer.memory:
            from langgraph.checkpoint.memory import InMemorySaver

            yield InMemorySaver()
            return
        if self.config.run.checkpointer == Checkpointer.postgres:
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

        path = (self.follow_up.home if self.follow_up else self.run_dir) / CHECKPOINT_FILE
        try:
            with contextlib.closing(sqlite3.connect(path, check_same_thread=False)) as connection:
                connection.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes on a new file: pages freed can be given back
                connection.execute("PRAGMA synchronous=NORMAL")
                yield InlineSqliteSaver(connection)
                connection.executescript("PRAGMA incremental_vacuum;")  # gives back the pages cut threads freed
        finally:
            scrub_sqlite(path)

    async def run_tasks(self, tasks: list[Task], build_agent: Callable[[Any], Any]) -> RunRecord | None:
        """Run every task and repeat, at most ``run.concurrency`` at once; each task counts into ``tally``
        as it ends and is not kept. Returns a single-task run's record (None for a multi-task run).

        Each task runs in an asyncio task of its own, let go when it ends (with the context it set:
        its recorder, its record), so what the run holds does not grow with the tasks done.
        """
        async with self._checkpointer() as saver:
            self.saver, self.agent = saver, build_agent(saver)
            keys = [(task, repeat) for task in tasks for repeat in range(self.config.run.repeats)]
            self.total = len(keys)
            self.tally = TaskTally(self.total)
            if self.multi:
                self.reports = RunReports(self.run_dir, self.total, self.config.sweep.prices)
            pending = []
            for index, (task, repeat) in enumerate(keys):
                record = self._previous(task, repeat) if self.config.run.resume else None
                if record is not None and record.status is not Status.NOT_RUN and record.status.terminal:
                    self.reused += 1
                    self._end(index, record, reused=True)  # complete: kept as it is
                else:  # a task the budget kept from starting starts afresh
                    pending.append((index, task, repeat, None if record is None or record.status is Status.NOT_RUN else record))
            work = iter(pending)

            async def worker() -> None:
                for index, task, repeat, previous in work:
                    self._end(index, await asyncio.create_task(self.run_task(task, repeat, previous)))

            with tasks_running():
                await asyncio.gather(*(worker() for _ in range(min(self.config.run.concurrency, len(pending)))))
        return None if self.multi else self.single

    def _previous(self, task: Task, repeat: int) -> RunRecord | None:
        """The task's record of the run before, if any; what it spent counts against the budgets."""
        task_dir = self.task_dir(task, repeat)
        record = read_record(task_dir / RESULT_FILE)
        if record is not None:
            self.budgets.book(record, task_dir)
        return record

    def _end(self, index: int, record: RunRecord, reused: bool = False) -> None:
        """A task is done (``reused``: complete in the run before): count it, let the progress line and reports know."""
        self.tally.add(index, record, reused)
        self.single = record
        self.done += 1
        self.satisfied += record.status is Status.SATISFIED
        self.tokens += sum(u.total_tokens for u in record.usage.values())
        if self.multi:
            self.console.progress(self.done, self.total, self.satisfied, self.tokens, self.budgets.progress())
        if self.reports is not None:
            self.reports.task_ended()

    async def run_task(self, task: Task, repeat: int, previous: RunRecord | None = None) -> RunRecord:
        """One task's rubric loop, start to record (``previous``: its record, unfinished, when resuming); its errors stay its own."""
        task_dir = self.task_dir(task, repeat)
        task_dir.mkdir(parents=True, exist_ok=True)
        key = f"{task.id}-r{repeat}"
        result = self.template.model_copy(deep=True, update={"run_dir": str(task_dir), "started_at": now()})
        result.rubric.text, result.rubric.task = task.rubric, task.message
        if self.multi:
            result.task_id, result.repeat = task.id, repeat
        if self.follow_up is not None:
            turn = self.follow_up
            result.task_id, result.repeat, result.thread_id = turn.task_id, turn.repeat, turn.thread_id
            result.turn, result.continued_from = turn.number, str(turn.previous)
            result.rubric.carried_over = turn.carries_over(task.rubric)
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

        def end_task() -> None:
            result.complete(started)
            write_record(task_dir / RESULT_FILE, result)
            if self.multi:
                log.info("task_end", status=result.status, iterations=result.iterations, wall_seconds=result.wall_seconds)

        spent = self.budgets.reached()
        if spent is not None:  # no task starts once a budget is spent; one begun earlier was cut short
            result.stop(Status.NOT_RUN if previous is None else Status.BUDGET_EXCEEDED, spent)
            end_task()
            return result
        write_record(task_dir / RESULT_FILE, result)
        self.active[key] = (result, end_task)
        values = None
        if self.multi:
            log.info("task_start", thread_id=result.thread_id, resumed=result.resumed)
        try:
            if self.stop is not None:
                self.stop.check()
            with task_trace(result, task.id, repeat, task.message):  # a LangSmith trace of its own, while tracing is on
                values = await self._execute(task, repeat, result, task_dir, log, console)
        except LimitExceeded as exc:
            result.stop(exc.status, exc.hit)
            log.warning(exc.status.value, limit=exc.hit.model_dump())
        except StopRequested as exc:
            result.interrupt(str(exc))
            log.warning("interrupted", reason=str(exc))
        except Exception as exc:  # one task's failure must not end the others, and leaves its record
            result.fail(exc)
            if is_provider_error(exc):
                result.error.message = explain_error(exc, self.config.worker, "worker")
            log.exception("task_error" if self.multi else "run_error")
        self.active.pop(key, None)
        end_task()
        if result.status.terminal and self.config.run.keep_checkpoints == KeepCheckpoints.latest:
            await self._keep_latest_checkpoint(result.thread_id, log, values)
        return result

    async def _keep_latest_checkpoint(self, thread_id: str, log: Any, values: dict[str, Any] | None) -> None:
        """Cut a finished task's thread to its latest checkpoint (``values``: its state, when the task read it
        as it ended); a failure leaves the thread readable, the task as it ended."""
        from .checkpoints import keep_latest

        try:
            await keep_latest(self.saver, self.agent, thread_id, values)
        except Exception as exc:
            log.warning("checkpoint_cut_failed", thread_id=thread_id, error=ErrorInfo.of(exc).model_dump())

    async def _execute(self, task: Task, repeat: int, result: RunRecord, task_dir: Path, log: Any,
                       console: Console) -> dict[str, Any]:
        """Run the task's rubric loop and record how it ended; returns the thread's state values as it ended."""
        from langchain_core.messages import HumanMessage, messages_to_dict

        from ..grader.middleware import TaskGrading, final_status
        from ..observe.recorder import Recorder

        recorder = Recorder(log, result, console, self.config.run.preview_chars)
        guard = TaskGuard(self.config.limits, self.budgets, result, task_dir)  # after the recorder, whose counts it reads
        strategy = result.grader.strategy or str(self.config.grader.structured_output)
        grading = TaskGrading(self.config.grader, strategy, task.rubric, log, console)
        CURRENT_TASK.set(TaskContext(task.id, repeat, task.tools, recorder, grading))
        run_config = {"configurable": {"thread_id": result.thread_id}, "callbacks": [recorder, guard],
                      **trace_labels(result, task.id, repeat)}
        agent_input: dict[str, Any] | None = {"messages": [HumanMessage(task.message)], "rubric": task.rubric}
        if result.rubric.carried_over:
            del agent_input["rubric"]  # the thread keeps it: RubricMiddleware grades the turn against it
        if result.resumed and (await self.agent.aget_state(run_config)).next:
            agent_input = None  # continue the interrupted step from the last checkpoint
            log.info("run_resumed", thread_id=result.thread_id, resumed=result.resumed)
        deadline = asyncio.timeout(self.config.limits.wall_seconds)
        try:
            async with deadline:
                stream = self.agent.astream(agent_input, run_config, stream_mode=["custom", "checkpoints"], durability="sync")
                async for mode, chunk in stream:
                    if mode == "custom":
                        recorder.on_stream_event(chunk)
                    elif self.stop is not None:
                        self.stop.check()
        except TimeoutError:
            if not deadline.expired():
                raise
            raise guard.expire() from None
        finally:
            recorder.forget_calls()  # a call a limit refused, or one cut off by the deadline, never ends
            values = state = (await self.agent.aget_state(run_config)).values
            messages = values.get("messages", [])
            write_json(task_dir / TRANSCRIPT_FILE, {"thread_id": result.thread_id, "messages": messages_to_dict(messages)})
            result.final_answer = final_answer(messages)
            result.attempts = graded_attempts(messages)
            if self.follow_up is not None and values.get("_current_grading_run_id") == self.follow_up.grading_run_id:
                values = {}  # stopped before this turn's grading run began: the turn before's verdict is not this one's
            result.iterations = int(values.get("_rubric_iterations") or 0)
            result.status = Status.of_loop(values.get("_rubric_status"))
            if values.get("_rubric_evaluations"):  # the checkpoint is the truth, also across resumes
                run_id = values.get("_current_grading_run_id")
                result.evaluations = [Evaluation.model_validate(e) for e in values["_rubric_evaluations"]
                                      if e["grading_run_id"] == run_id]
                result.grading_run_id = run_id
            result.status = final_status(result.status, result.evaluations, self.config.grader.strict_coverage)
        if result.status is Status.ERROR:
            result.error = ErrorInfo(type="NoVerdict", message="the grader never returned a verdict")
        if result.status.terminal and self.checks.get(task.id):
            await self._verify(self.checks[task.id], result, messages, log, console)
        return state

    async def _verify(self, checks: list[Check], result: RunRecord, messages: list[Any], log: Any, console: Console) -> None:
        """Run the task's hidden checks on the first and the final answer; record and log what they found."""
        result.first_answer = first_answer(messages)
        final = await verify(checks, result.final_answer)
        first = final if result.first_answer == result.final_answer else await verify(checks, result.first_answer)
        result.verification = Verifications(first=first, final=final)
        for which, verification in (("first", first), ("final", final)):
            checks_seen = [{**check.model_dump(exclude={"details"}), "details": preview(check.details, self.config.run.preview_chars)}
                           for check in verification.checks]
            log.info("verification", answer=which, outcome=verification.outcome, error=verification.error, checks=checks_seen)
        console.line(f"hidden verification: first answer {first.outcome}, final answer {final.outcome}")

    def interrupt_all(self, reason: str) -> list[RunRecord]:
        """Record every task in flight as interrupted (used when stopping at once)."""
        interrupted = []
        for result, end_task in list(self.active.values()):
            result.interrupt(reason)
            end_task()
            interrupted.append(result)
        self.active.clear()
        return interrupted
