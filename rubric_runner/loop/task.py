"""One task x repeat, start to record: its context, the agent's stream, what its state says at the end.

The task's record is written when it starts and again when it ends, however it ends: a limit or budget
reached, a stop asked for, an error of its own (which never ends the other tasks). Its thread's state
is the truth about the loop, also across resumes: the verdicts, the status and the answers are read
back from it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from ..compat.deepagents import LoopState
from ..compat.langchain import transcript_messages
from ..config.schema import KeepCheckpoints, OnCutView, WorkerBackend
from ..context import CURRENT_TASK, TaskContext, TaskRef
from ..errors import out_of_space
from ..grader.evidence import final_status
from ..grader.notes import TaskGrading
from ..models.errors import explain_error, is_provider_error
from ..observe.console import Console
from ..observe.events import bind_task
from ..observe.recorder import Recorder, preview
from ..observe.tracing import task_trace, trace_labels
from ..records import (
    RESULT_FILE,
    TRANSCRIPT_FILE,
    AttemptVerification,
    ErrorInfo,
    Evaluation,
    Returned,
    RunRecord,
    Status,
    TaskRecord,
    Verification,
    Verifications,
    now,
    task_key,
    write_json,
    write_record,
)
from ..tasks.checks import verify
from ..tasks.trajectory import Rules, worker_calls
from ..tasks.workspace import Workspace
from .answers import attempt_messages, final_answer, first_answer, graded_attempts
from .backends import LIVE_DIR, seed
from .budgets import Budgets
from .cells import Cell
from .limits import LimitExceeded, TaskGuard
from .mirror import restore
from .plan import Plan
from .policy import STATE_KEY as RETURNED_KEY
from .signals import StopRequest, StopRequested
from .workspaces import attempt_name, files_at, keep, keep_seed, kept, texts


@dataclass
class Shared:
    """What every task of a run shares: the plan and the run's header, the agent and its checkpointer, the
    budgets, where events and lines go, the stop request, and the tasks under way (to record them at a hard stop)."""

    plan: Plan
    run: RunRecord
    agent: Any
    saver: Any
    budgets: Budgets
    log: Any
    console: Console
    stop: StopRequest | None
    active: dict[str, tuple[TaskRecord, Any]] = field(default_factory=dict)

    def save(self, record: TaskRecord, task_dir: Path) -> None:
        """Write a task's record, in its own dir."""
        write_record(task_dir / RESULT_FILE, record)


class TaskRun:
    """One cell of a run: a task x repeat afresh or a follow-up turn (``previous``: its unfinished record, when
    the run is resumed)."""

    def __init__(self, shared: Shared, cell: Cell, previous: TaskRecord | None) -> None:
        plan, task, repeat = shared.plan, cell.task, cell.repeat
        self.shared, self.task, self.repeat, self.previous, self.turn = shared, task, repeat, previous, cell.turn
        self.dir = cell.dir
        self.key = task_key(task.id, repeat)
        self.record = TaskRecord(run_dir=str(self.dir), started_at=now(), task=task.message, rubric=task.rubric,
                                 task_id=task.id if task.named else None, repeat=repeat,
                                 workspace_seed=task.workspace.digest if task.workspace is not None else None)
        if cell.turn is not None:
            self.record.rubric_carried_over = cell.turn.carries_over(task.rubric)
        if previous is not None:
            self.record.evaluations, self.record.usage = previous.evaluations, previous.usage
            self.record.resumed, self.record.thread_id = previous.resumed + 1, previous.thread_id
        self.record.thread_id = self.record.thread_id or cell.thread_id
        self.log = shared.log
        self.console = shared.console if plan.watched() else Console(enabled=False)
        # a resumed task's time counts the part it ran before too
        self.started = time.monotonic() - (previous.wall_seconds or 0.0 if previous is not None else 0.0)

    @property
    def ref(self) -> TaskRef:
        """Which task this is, for code outside the loop."""
        return TaskRef(self.task.id, self.repeat, str(self.dir), self.record.thread_id)

    def end(self) -> None:
        """Complete and write the task's record."""
        self.record.complete(self.started)
        self.shared.save(self.record, self.dir)
        self.log.info("task_end", status=self.record.status, iterations=self.record.iterations,
                      wall_seconds=self.record.wall_seconds)

    async def __call__(self) -> TaskRecord:
        """Run the task's rubric loop and record how it ended; its errors stay its own."""
        shared, record = self.shared, self.record
        self.dir.mkdir(parents=True, exist_ok=True)
        bind_task(task_id=self.record.task_id, repeat=self.repeat)  # its own asyncio task's context: the binding stays its own
        if self.turn is not None:
            carried, continues = bool(record.rubric_carried_over), str(self.turn.previous)
            self.log.info("turn_start", turn=self.turn.number, thread_id=self.turn.thread_id, continues=continues,
                          rubric_carried_over=carried)
            self.console.turn(self.turn.number, continues, carried)
        spent = shared.budgets.reached()
        if spent is not None:  # no task starts once a budget is spent; one begun earlier was cut short
            record.stop(Status.NOT_RUN if self.previous is None else Status.BUDGET_EXCEEDED, spent)
            self.end()
            return record
        shared.save(record, self.dir)
        shared.active[self.key] = (record, self.end)
        values = None
        self.log.info("task_start", thread_id=record.thread_id, resumed=record.resumed)
        try:
            if shared.stop is not None:
                shared.stop.check()
            with task_trace(shared.run.header, record, self.task.id, self.repeat):  # a LangSmith trace of its own, while tracing is on
                values = await self._loop()
        except LimitExceeded as exc:
            record.stop(exc.status, exc.hit)
            self.log.warning(exc.status.value, limit=exc.hit.model_dump())
        except StopRequested as exc:
            record.interrupt(str(exc))
            self.log.warning("interrupted", reason=str(exc))
        except Exception as exc:  # one task's failure must not end the others, and leaves its record
            if out_of_space(exc) is not None:  # but no room to record it ends them all
                raise
            record.fail(exc)
            if is_provider_error(exc):
                record.error.message = explain_error(exc, shared.plan.config.worker, "worker")
            self.log.exception("task_error")
        shared.active.pop(self.key, None)
        self.end()
        if record.status.terminal and shared.plan.config.run.keep_checkpoints == KeepCheckpoints.latest:
            await self._trim_thread(values)
        return record

    async def _trim_thread(self, values: dict[str, Any] | None) -> None:
        """Cut a finished task's thread to its latest checkpoint, or drop it from memory (``values``: its state,
        when the task read it as it ended); a failure leaves the thread readable, the task as it ended."""
        from .checkpoints import trim_finished

        try:
            await trim_finished(self.shared.saver, self.shared.agent, self.record.thread_id, values)
        except Exception as exc:
            self.log.warning("checkpoint_cut_failed", thread_id=self.record.thread_id, error=ErrorInfo.of(exc).model_dump())

    async def _loop(self) -> dict[str, Any]:
        """The agent's stream for this task; the loop's end read from the thread's state, which is returned."""
        shared, record, plan = self.shared, self.record, self.shared.plan
        recorder = Recorder(self.log, record, self.console, plan.config.run.preview_chars)
        guard = TaskGuard(plan.config.limits, shared.budgets, record, self.dir)  # after the recorder, whose counts it reads
        grading = TaskGrading(plan.config.grader, plan.strategy or "", self.task.rubric, self.log, self.console)
        workspace = self.task.workspace
        on_disk = plan.config.worker.backend is not WorkerBackend.state
        context = TaskContext(self.ref, self.task.tools, recorder, grading, guard, workspace,
                              str(self.dir / LIVE_DIR) if on_disk else None, plan.config.rubric.workspace_diff_max_bytes)
        CURRENT_TASK.set(context)
        if workspace is not None:
            keep_seed(plan.run_dir, workspace)
        run_config = {"configurable": {"thread_id": record.thread_id}, **trace_labels(shared.run.header, record, self.task.id, self.repeat)}
        agent_input: dict[str, Any] | None
        agent_input = {"messages": [HumanMessage(self.task.message)], "rubric": self.task.rubric}
        if record.rubric_carried_over:
            del agent_input["rubric"]  # the thread keeps it: RubricMiddleware grades the turn against it
        if on_disk:  # the dir made what the thread goes on with (empty for a new one), before any tool reads it
            await restore(shared.agent, run_config, self.dir / LIVE_DIR)
        saved = await shared.agent.aget_state(run_config) if record.resumed else None
        if workspace is not None and self.turn is None and not (saved is not None and saved.values.get("messages")):
            agent_input.update(seed(plan.config.worker.backend, workspace))  # the task's first turn: never again on its thread
        ended = saved is not None and not saved.tasks and self._turn_ended(saved.values)
        if saved is not None and saved.tasks:  # steps begun (``next`` leaves out those whose writes are saved)
            agent_input = None  # continue the interrupted step from the last checkpoint
            self.log.info("run_resumed", thread_id=record.thread_id, resumed=record.resumed)
        deadline = asyncio.timeout(plan.config.limits.wall_seconds)
        state = saved.values if saved is not None and ended else None
        try:
            async with deadline:
                if not ended:  # a turn that ended before its record was written is only read back
                    state = await self._stream(agent_input, run_config, recorder)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise guard.expire() from None
        finally:
            if context.shell is not None:  # the sandbox backend's session ends with the task's stream
                await asyncio.to_thread(context.shell.close)
            recorder.forget_calls()  # a call a limit refused, or one cut off by the deadline, never ends
            if state is None:  # the stream did not end: its state is the thread's last checkpoint
                state = (await shared.agent.aget_state(run_config)).values
            self._read_back(state)
        if record.status is Status.ERROR:
            record.error = ErrorInfo(type="NoVerdict", message="the grader never returned a verdict")
        checks = plan.checks.get(self.task.id)
        if record.status.terminal and checks:
            await self._verify(checks, state.get("messages", []))
        return state

    async def _stream(self, agent_input: dict[str, Any] | None, run_config: dict[str, Any],
                      recorder: Recorder) -> dict[str, Any] | None:
        """Run the agent on the thread, passing its stream events to the recorder and checking for a stop after
        each step; returns the state after the last one (what ``aget_state`` would read back)."""
        stop, values = self.shared.stop, None
        stream = self.shared.agent.astream(agent_input, run_config, stream_mode=["custom", "values"], durability="sync")
        async for mode, chunk in stream:
            if mode == "custom":
                recorder.stream_event(chunk)
                continue
            values = chunk
            if stop is not None:
                stop.check()
        return values

    def _turn_ended(self, values: dict[str, Any]) -> bool:
        """Whether the thread's saved state holds this turn's final verdict (its process died before the
        record was written); a follow-up turn's verdict is that of a grading run of its own."""
        loop, turn = LoopState.of(values), self.turn
        return (loop.status is not None and Status.of_loop(loop.status).terminal
                and (turn is None or loop.grading_run_id != turn.grading_run_id))

    def _read_back(self, values: dict[str, Any]) -> None:
        """The transcript, answers, verdicts and status, as the thread's state holds them."""
        record, turn = self.record, self.turn
        messages = values.get("messages", [])
        write_json(self.dir / TRANSCRIPT_FILE, {"thread_id": record.thread_id, "messages": transcript_messages(messages)})
        record.final_answer = final_answer(messages)
        record.attempts = graded_attempts(messages)
        loop = LoopState.of(values)
        if turn is not None and loop.grading_run_id == turn.grading_run_id:
            loop = LoopState.of({})  # stopped before this turn's grading run began: the turn before's verdict is not this one's
        record.iterations = loop.iterations
        if loop.evaluations:  # the checkpoint is the truth, also across resumes
            record.evaluations = [Evaluation.model_validate(e) for e in loop.evaluations]
            record.grading_run_id = loop.grading_run_id
        record.checklist = loop.checklist
        returned = values.get(RETURNED_KEY)
        if returned and returned.get("grading_run_id") == loop.grading_run_id and loop.grading_run_id:
            record.returned = Returned.model_validate(returned)
        if self.task.workspace is not None:
            self._read_back_workspace(values, self.task.workspace)
        node = self.shared.plan.config.grader
        record.status = final_status(Status.of_loop(loop.status), record.evaluations, node.strict_coverage,
                                     node.on_cut_view is OnCutView.fail)

    def _checked_files(self, answer: str | None) -> str | dict[str, str] | None:
        """What a check is given: the answer, or a workspace task's kept files ``answer`` names, the protected
        ones as the seed has them."""
        workspace = self.task.workspace
        if workspace is None or answer is None:
            return answer
        files = files_at(self.dir, answer, workspace.files)
        return {**files, **{path: workspace.files[path] for path in workspace.protected_paths()}}

    def _read_back_workspace(self, values: dict[str, Any], workspace: Workspace) -> None:
        """Each grading pass's workspace as it was kept, and the final one, kept from the state now."""
        record = self.record
        found = [kept(self.dir, attempt_name(attempt)) for attempt in range(1, record.iterations + 1)]
        record.workspaces = [workspace for workspace in found if workspace is not None]
        record.final_workspace = keep(self.dir, "final", workspace, texts(values.get("files")),
                                      self.shared.plan.config.rubric.workspace_diff_max_bytes)

    async def _verify(self, checks: list[Any], messages: list[Any]) -> None:
        """Run the task's hidden checks on every attempt the grader judged (``rubric.verify_every_attempt``;
        else on the first and the final answer only), each distinct answer once, trajectory rules on the
        worker's calls up to it; record and log what they found."""
        record = self.record
        record.first_answer = first_answer(messages)
        found: dict[tuple[str | None, int | None], Verification] = {}
        tampered: dict[str | None, list[str]] = {}
        on_calls = any(isinstance(check, Rules) for check in checks)
        ends = attempt_messages(messages)

        async def checked(answer: str | None, attempt: int | None) -> Verification:
            """``answer``'s checks, on the calls up to attempt ``attempt``'s answer (from 1; None: all)."""
            given = self._checked_files(answer)
            calls = worker_calls(messages, ends[attempt - 1] if attempt is not None and attempt <= len(ends) else None)
            key = answer if not isinstance(given, dict) else sha256(json.dumps([given, tampered.get(answer)], sort_keys=True).encode()).hexdigest()
            seen = (key, len(calls) if on_calls else None)  # an attempt's calls are the first of all the calls
            if seen not in found:
                found[seen] = await verify(checks, given, tampered.get(answer), calls, self.task.workspace)
            return found[seen]

        answers: list[tuple[str, int | None]] = [(message.text, number) for number, message in enumerate(ends, 1)]
        first_attempt, final_attempt = (record.first_answer, 1 if ends else None), (record.final_answer, None)
        if self.task.workspace is not None:  # the attempts are the workspaces the passes read; the final one is the last
            answers = [(attempt_name(kept.attempt), kept.attempt) for kept in record.workspaces]
            tampered = {attempt_name(kept.attempt): kept.tampered for kept in record.workspaces}
            tampered["final"] = record.final_workspace.tampered
            first_attempt, final_attempt = (answers or [("final", None)])[0], ("final", None)
        every = self.shared.plan.config.rubric.verify_every_attempt
        record.verified_attempts = []
        for index, (answer, number) in enumerate(answers):
            evaluation = record.evaluations[index] if index < len(record.evaluations) else None
            wanted = every or index in (0, len(answers) - 1)
            attempt = AttemptVerification(
                attempt=index + 1, verdict=evaluation.result if evaluation else None,
                criteria={criterion.name: criterion.passed for criterion in evaluation.criteria} if evaluation else {},
                verification=await checked(answer, number) if wanted else None, tampered=tampered.get(answer, []))
            record.verified_attempts.append(attempt)
            if attempt.verification is not None:
                self.log.info("attempt_verified", attempt=attempt.attempt, verdict=attempt.verdict,
                              outcome=attempt.verification.outcome)
        final = await checked(*final_attempt)
        first = await checked(*first_attempt)
        record.verification = Verifications(first=first, final=final)
        preview_chars = self.shared.plan.config.run.preview_chars
        for which, verification in (("first", first), ("final", final)):
            checks_seen = [{**check.model_dump(exclude={"details"}), "details": preview(check.details, preview_chars)}
                           for check in verification.checks]
            self.log.info("verification", answer=which, outcome=verification.outcome, error=verification.error, checks=checks_seen)
        self.console.line(f"hidden verification: first answer {first.outcome}, final answer {final.outcome}")
