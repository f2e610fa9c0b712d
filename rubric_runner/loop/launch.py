"""One rubric run, from a composed config to its records; the command line and ``rubric_runner.run`` share it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from omegaconf import DictConfig

from ..analysis.spend import spend_lines
from ..config.validate import validate
from ..errors import ConfigError
from ..observe.console import Console
from ..observe.events import event_log
from ..observe.tracing import flush as flush_traces
from ..plugins.extensions import notify_run_end
from ..records import EVENTS_FILE, RESULT_FILE, RunRecord, now, write_record
from ..redaction import redact_override
from ..sandbox import isolation_setting
from .followup import FollowUp, check_thread_kept
from .runtime import run_coroutine
from .signals import StopRequest


class RunDirInUse(ConfigError):
    """The run dir already holds another run's record (and this run is no resume)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__("hydra.run.dir", f"{run_dir} already holds another run's record",
                         "leave hydra.run.dir unset for a new dir, or continue that run with `rubric-runner resume DIR`")


def claim_run_dir(run_dir: Path, resume: bool) -> None:
    """Make ``run_dir`` this run's: create ``result.json`` there, unless another run's is there already.

    Creating the file is atomic, so of two runs started at once in one dir only one gets it. A
    resumed run continues the record that is there.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        return
    try:
        os.close(os.open(run_dir / RESULT_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise RunDirInUse(run_dir) from None


def execute(cfg: DictConfig, run_dir: str | Path, overrides: list[str] | None = None,
            stop: StopRequest | None = None, claimed: bool = False, sweep_dir: Path | None = None,
            follow_up: FollowUp | None = None) -> RunRecord:
    """Run the rubric loop for every task; write ``result.json``, ``events.jsonl``, transcripts.

    A single task writes its files in ``run_dir``. With a dataset or repeats,
    each task writes in ``run_dir/tasks/<id>-r<k>/`` and ``run_dir/result.json``
    aggregates them. With ``run.resume=true``, complete tasks are kept as they
    are and interrupted or failed ones continue from their checkpoints. ``stop``
    (the command line's signal handling) is checked at every checkpoint; without
    ``claimed`` (the command line claims its run dir itself) the run claims ``run_dir``
    first and raises ``RunDirInUse`` when another run's record is there. ``sweep_dir`` (a sweep's
    job) holds the ledger of the sweep's budget. With ``follow_up``, the run is that follow-up turn
    on a finished run's thread (``turns``), recorded in ``run_dir``.
    """
    run_dir = Path(run_dir)
    if not claimed:
        claim_run_dir(run_dir, bool(cfg.get("run", {}).get("resume", False)))
    record = RunRecord(overrides=[redact_override(o) for o in overrides or []], run_dir=str(run_dir), started_at=now())
    console = Console(enabled=bool(cfg.get("run", {}).get("console", True)))
    started = time.monotonic()
    session = None
    budgets = None

    with event_log(run_dir / EVENTS_FILE) as log:

        def end_run() -> None:
            """Complete and write the run's record, however it ended."""
            record.complete(started)
            write_record(run_dir / RESULT_FILE, record)
            if session is not None and session.reports is not None:
                session.reports.close()
            flush_traces()
            log.info("run_end", status=record.status, exit_code=record.exit_code, iterations=record.iterations,
                     usage=record.usage_dict(), wall_seconds=record.wall_seconds,
                     aggregate=record.aggregate.model_dump() if record.aggregate else None)
            notify_run_end(record, log)
            if record.aggregate:
                console.summary(record.aggregate.model_dump())
            for line in spend_lines([record]):
                console.line(line)
            console.finish(record.status, record.iterations, str(run_dir), record.error and record.error.message)

        def stop_now(reason: str) -> None:
            nonlocal record
            interrupted = session.interrupt_all(reason) if session is not None else []
            if session is not None and not session.multi and interrupted:
                record = interrupted[0]
            else:
                record.interrupt(reason)
            log.warning("interrupted", reason=reason)
            end_run()

        if stop is not None:
            stop.attach(console.line, stop_now)
        try:
            config = validate(cfg)
            from ..observe.recorder import sandbox_notices
            from ..tasks.checks import resolve_checks
            from ..tasks.sets import load_tasks
            from .agent import AgentFactory, note_what_ran
            from .budgets import Budgets
            from .session import Session

            note_what_ran(record, config)
            tasks = load_tasks(config)
            if follow_up is not None:
                check_thread_kept(config)
                tasks = [follow_up.task(tasks)]
            console.start(config.worker.model, config.grader.model, config.rubric.name,
                          {role for role in ("worker", "grader") if getattr(record, role).scripted})
            budgets = Budgets(config, run_dir, sweep_dir)
            factory = AgentFactory(config, follow_up.home if follow_up else run_dir)
            for failure in factory.registry.plugins.failures:
                console.warning(f"plugin {failure.name!r} not loaded: {failure.error}")
            factory.check_task_tools(tasks)
            factory.note_strategy(record.grader)
            checks = resolve_checks(factory.registry, config.rubric, tasks)
            multi = follow_up is None and (len(tasks) > 1 or config.run.repeats > 1)
            session = Session(config, run_dir, log, console, record, multi, budgets, stop, follow_up, checks)
            log.info("run_start", worker=record.worker.model_dump(), grader=record.grader.model_dump(),
                     rubric=config.rubric.name, overrides=record.overrides, tasks=len(tasks), repeats=config.run.repeats)
            console.strategy(config.grader.structured_output, factory.strategy, factory.probe)
            if follow_up is not None:
                carried = follow_up.carries_over(tasks[0].rubric)
                log.info("turn_start", turn=follow_up.number, thread_id=follow_up.thread_id, continues=str(follow_up.previous),
                         rubric_carried_over=carried)
                console.turn(follow_up.number, str(follow_up.previous), carried)
            with isolation_setting(config.sandbox.isolation, sandbox_notices(log, console)):
                single = run_coroutine(session.run_tasks(tasks, lambda saver: factory.build(session.on_evaluation, saver)))
            if single is None:
                record.aggregate_tally(session.tally, config.run.repeats)
            elif session.reused:
                log.info("run_already_complete", status=single.status)
                console.line(f"already complete: {single.status} (nothing to resume)")
                return single
            else:
                record = single
            record.budgets = budgets.infos()
        except ConfigError as exc:
            record.fail(exc)
            log.error("config_error", key=exc.key, message=str(exc))
        except KeyboardInterrupt:  # no signal handler (a notebook's stop button): record it, then stop
            stop_now("KeyboardInterrupt: stopped without waiting for a checkpoint")
            raise
        except Exception as exc:  # whatever breaks the run as a whole still leaves its record
            record.fail(exc)
            log.exception("run_error")
        finally:
            if budgets is not None:
                budgets.close()
        end_run()
    return record

