"""A claimed run's work, start to end: its plan, the network step, then its tasks (or a regrade's passes).

What it finds fills the run's record: a row per task x repeat and their aggregate (``TaskTally``), the
status the worst task's, and what the budgets spent.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..analysis.spend import spend_lines
from ..environment import run_coroutine
from ..errors import NoSpace, UsageError, out_of_space
from ..observe.console import Console
from ..observe.events import event_log
from ..observe.recorder import sandbox_notices
from ..observe.tracing import flush as flush_traces
from ..plugins.events import RunEnded
from ..plugins.extensions import notify_run_end
from ..records import CHECKPOINT_FILE, EVENTS_FILE, RESULT_FILE, RunRecord, write_record
from ..sandbox import isolation_setting
from ..tasks.workspace import unmatched_protected
from .budgets import Budgets
from .plan import Plan, connect, prepare
from .request import Launch
from .run import TaskSet, move_inline_task


class Execution:
    """The work of one launch in its claimed run dir, recorded in ``record`` as it goes (``previous``: the
    run's record before, on a resume)."""

    def __init__(self, cfg: DictConfig, run_dir: Path, request: Launch, record: RunRecord, previous: RunRecord | None) -> None:
        self.cfg, self.run_dir, self.request, self.record, self.previous = cfg, run_dir, request, record, previous
        self.console = Console(enabled=bool(OmegaConf.select(cfg, "run.console", default=True)))
        self.log: Any = None
        self.plan: Plan | None = None
        self.budgets: Budgets | None = None
        self.tasks: TaskSet | None = None
        self.started = time.monotonic()

    def perform(self) -> RunRecord:
        """Do the work, and complete and write the record however it ended; returns the record."""
        write_record(self.run_dir / RESULT_FILE, self.record)
        with event_log(self.run_dir / EVENTS_FILE) as log:
            self.log = log
            if self.request.stop is not None:
                self.request.stop.attach(self.console.line, self.stop_now)
            try:
                run_coroutine(self.run())
            except UsageError as exc:
                self.record.fail(exc)
                log.error("config_error", key=exc.key, message=str(exc))
            except KeyboardInterrupt:  # no signal handler (a notebook's stop button): record it, then stop
                self.stop_now("KeyboardInterrupt: stopped without waiting for a checkpoint")
                raise
            except Exception as exc:  # whatever breaks the run as a whole still leaves its record
                if not self.ran_out_of_space(exc):  # else nothing more can be logged: the record (if it fits) says why
                    self.record.fail(exc)
                    log.exception("run_error")
            finally:
                if self.budgets is not None:
                    self.budgets.close()
            self.end()
        return self.record

    def end(self) -> None:
        """Complete and write the run's record, however it ended; tell the hooks, the log and the console."""
        record, console = self.record, self.console
        record.complete(self.started)
        try:
            write_record(self.run_dir / RESULT_FILE, record)
            flush_traces()
            self.log.info("run_end", status=record.status, exit_code=record.exit_code, iterations=record.grading_passes(),
                          usage={role: counts.model_dump() for role, counts in record.task_usage().items()},
                          wall_seconds=record.wall_seconds, aggregate=record.aggregate.model_dump() if record.aggregate else None)
            event = RunEnded(record.model_copy(deep=True))
            if self.plan is not None:
                self.plan.extensions.run_ended(event, self.log)
            else:
                notify_run_end(event, self.log)
        except Exception as exc:
            if not self.ran_out_of_space(exc):
                raise
            record.complete(self.started)
            with contextlib.suppress(Exception):  # a record that cannot be written still says running: a resume takes it over
                write_record(self.run_dir / RESULT_FILE, record)
        watched = self.plan is not None and self.plan.watched()  # the console has followed the one task
        if record.aggregate and not watched:
            console.summary(record.aggregate.model_dump())
        for line in spend_lines([record]):
            console.line(line)
        error = record.error if watched or not record.tasks else None  # a task set's tasks' errors are theirs
        console.finish(record.status, record.grading_passes(), str(self.run_dir), error and error.message)

    def ran_out_of_space(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the disk is full; if so the record fails with that (once)."""
        full = out_of_space(exc, self.database())
        if full is not None and (self.record.error is None or self.record.error.type != NoSpace.__name__):
            self.record.fail(NoSpace(*full, str(self.run_dir)))
        return full is not None

    def database(self) -> str:
        """The file a SQLite error that names none stands for: the run's checkpoints."""
        return str((self.plan.home if self.plan is not None else self.run_dir) / CHECKPOINT_FILE)

    def stop_now(self, reason: str) -> None:
        """Record the tasks in flight, and the run, as interrupted, and end (a stop at once)."""
        if self.tasks is not None:
            self.tasks.interrupt_all(reason)
        self.record.interrupt(reason)
        self.log.warning("interrupted", reason=reason)
        self.end()

    def ready(self) -> Plan:
        """Plan the run and connect to its models (the console says what runs); the plan."""
        request, console, header = self.request, self.console, self.record.header
        plan = self.plan = prepare(self.cfg, header, self.run_dir, request.work, request.sweep_dir)
        for failure in plan.registry.plugins.failures:
            console.warning(f"plugin {failure.name!r} not loaded: {failure.error}")
        for name in self.unavailable_evidence(plan):
            console.warning(f"rubric.evidence requires {name}, which the grader lacks: a satisfied verdict "
                            "will be recorded as unsupported")
        for task, glob in unmatched_protected(plan.tasks):
            console.warning(f"protected glob {glob!r} matches no file of task {task}'s workspace")
        if request.regrading is not None:
            console.line(f"regrade of {request.regrading.source}: grader={header.grader.model} rubric={header.rubric.name}")
        else:
            scripted = {role for role in ("worker", "grader") if getattr(header, role).scripted}
            console.start(header.worker.model, header.grader.model, header.rubric.name, scripted)
        connect(plan, header)
        return plan

    def unavailable_evidence(self, plan: Plan) -> list[str]:
        """The tools ``rubric.evidence`` requires that the grader lacks."""
        config = plan.config
        return [name for name in config.rubric.evidence if name not in config.grader.tools]

    async def run(self) -> None:
        """Plan, connect (unless done before), and run the tasks (a resumed run's finished ones kept as they are)."""
        request, record, console = self.request, self.record, self.console
        header = record.header
        plan = self.plan or self.ready()
        for name in self.unavailable_evidence(plan):
            self.log.warning("evidence_unavailable", tool=name)
        for task, glob in unmatched_protected(plan.tasks):
            self.log.warning("protected_unmatched", task_id=task, glob=glob)
        self.log.info("run_start", worker=header.worker.model_dump(), grader=header.grader.model_dump(),
                      rubric=header.rubric.name, overrides=header.sources.overrides, tasks=len(plan.tasks),
                      repeats=plan.config.run.repeats)
        console.strategy(plan.config.grader.structured_output, plan.strategy or "", header.grader.probe)
        self.budgets = Budgets(plan.config, header, self.run_dir, request.sweep_dir)
        with isolation_setting(plan.config.sandbox.isolation, sandbox_notices(self.log, console)):
            if request.regrading is not None:
                from .regrade import regrade

                await regrade(plan, record, self.log, console, request.regrading.source, request.stop)
                return
            inline = self.previous.inline_task if self.previous is not None else None
            moved = move_inline_task(plan, inline) if inline is not None else None
            if moved is not None:
                self.budgets.moved(self.run_dir, moved)
            self.tasks = TaskSet(plan, record, self.budgets, self.log, console, request.stop, self._task_ended)
            await self.tasks.run(request.resume)
        self.tasks.tally.fill(record, plan.config.run.repeats)
        record.budgets = self.budgets.infos()
        if self.tasks.reused == len(plan.cells):
            self.log.info("run_already_complete", status=record.status)
            console.line(f"already complete: {record.status} (nothing to resume)")

    def _task_ended(self, event: Any) -> None:
        assert self.plan is not None, "the plan is made before any task runs"
        self.plan.extensions.task_ended(event, self.log)
