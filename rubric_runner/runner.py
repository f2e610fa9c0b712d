"""run(): one rubric run, from validated config to result records; testable without Hydra."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from omegaconf import DictConfig

from .config import ConfigError, validate
from .console import Console
from .runlog import CONFIG_ERROR_EXIT, EventLog, RunResult, Usage, redact_override, write_result
from .session import EVENTS_FILE, RESULT_FILE, Session, StopRequest, complete, describe, now, usage_dict

SEVERITY = ("satisfied", "max_iterations_reached", "failed", "unsupported", "grader_error", "error", "interrupted")
"""Task statuses from best to worst; a multi-task run takes its worst task's status."""


def aggregate(record: RunResult, results: list[RunResult], session: Session) -> None:
    """Fill a multi-task run's record from its task records."""
    record.usage = {"worker": Usage(), "grader": Usage()}
    for result in results:
        for role, counts in result.usage.items():
            record.usage.setdefault(role, Usage()).merge(counts)
    record.tasks = [
        {
            "task_id": r.task_id,
            "repeat": r.repeat,
            "status": r.status,
            "iterations": r.iterations,
            "run_dir": r.run_dir,
            "reused": f"{r.task_id}-r{r.repeat}" in session.reused,
        }
        for r in results
    ]
    record.status = max((r.status for r in results), key=SEVERITY.index, default="error")
    record.iterations = sum(r.iterations for r in results)
    by_task: dict[str, list[bool]] = {}
    for r in results:
        by_task.setdefault(r.task_id or "task", []).append(r.status == "satisfied")
    runs = len(results)
    satisfied = sum(r.status == "satisfied" for r in results)
    record.aggregate = {
        "tasks": len(by_task),
        "repeats": session.config.run.repeats,
        "runs": runs,
        "satisfied": satisfied,
        "satisfied_rate": round(satisfied / runs, 4) if runs else 0.0,
        "pass_at_k": round(sum(any(v) for v in by_task.values()) / len(by_task), 4) if by_task else 0.0,
        "pass_hat_k": round(sum(all(v) for v in by_task.values()) / len(by_task), 4) if by_task else 0.0,
        "statuses": {status: sum(r.status == status for r in results) for status in SEVERITY if any(r.status == status for r in results)},
        "reused": len(session.reused),
        "rerun": runs - len(session.reused),
        "cache_hits": sum(counts.cached_calls for counts in record.usage.values()),
    }


def run(cfg: DictConfig, run_dir: str | Path, overrides: list[str] | None = None) -> RunResult:
    """Run the rubric loop for every task; write ``result.json``, ``events.jsonl``, transcripts.

    A single task writes its files in ``run_dir``. With a dataset or repeats,
    each task writes in ``run_dir/tasks/<id>-r<k>/`` and ``run_dir/result.json``
    aggregates them. With ``run.resume=true``, complete tasks are kept as they
    are and interrupted or failed ones continue from their checkpoints.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    record = RunResult(overrides=[redact_override(o) for o in overrides or []], run_dir=str(run_dir), started_at=now())
    console = Console(enabled=bool(cfg.get("run", {}).get("console", True)))
    started = time.monotonic()
    session: Session | None = None

    def finish() -> None:
        """Complete and write the run's record, however it ended."""
        config_error = bool(record.error and record.error["type"] == "ConfigError")
        complete(record, started)
        if config_error:
            record.exit_code = CONFIG_ERROR_EXIT
        write_result(run_dir / RESULT_FILE, record)
        log.info("run_end", status=record.status, exit_code=record.exit_code, iterations=record.iterations,
                 usage=usage_dict(record), wall_seconds=record.wall_seconds, aggregate=record.aggregate)
        if record.aggregate:
            console.summary(record.aggregate)
        console.finish(record.status, record.iterations, str(run_dir), record.error and record.error["message"])

    def stop_now(reason: str) -> None:
        nonlocal record
        interrupted = session.interrupt_all(reason) if session is not None else []
        if session is not None and not session.multi and interrupted:
            record = interrupted[0]
        else:
            record.status = "interrupted"
            record.error = {"type": "KeyboardInterrupt", "message": reason}
        log.warning("interrupted", reason=reason)
        finish()

    with EventLog(run_dir / EVENTS_FILE) as log, StopRequest(console, stop_now).installed() as stop:
        try:
            config = validate(cfg)
            describe(config, record)
            from .agent import Shared
            from .dataset import load_tasks

            tasks = load_tasks(config)
            console.start(config.worker.model, config.grader.model, config.rubric.name,
                          {role for role in ("worker", "grader") if getattr(record, role)["scripted"]})
            shared = Shared(config, run_dir)
            for failure in shared.registry.plugins.failures:
                console.warning(f"plugin {failure.name!r} not loaded: {failure.error}")
            shared.check_task_tools(tasks)
            record.grader.update(shared.grader_record())
            session = Session(config, run_dir, log, console, record.overrides, multi=len(tasks) > 1 or config.run.repeats > 1)
            session.stop, session.grader = stop, shared.grader_record()
            log.info("run_start", worker=record.worker, grader=record.grader, rubric=config.rubric.name,
                     overrides=record.overrides, tasks=len(tasks), repeats=config.run.repeats)
            console.strategy(config.grader.structured_output, shared.strategy, shared.probe)
            results = asyncio.run(session.run_tasks(tasks, lambda saver: shared.build(session.on_evaluation, saver)))
            if session.multi:
                aggregate(record, results, session)
            elif session.reused:
                log.info("run_already_complete", status=results[0].status)
                console.line(f"already complete: {results[0].status} (nothing to resume)")
                return results[0]
            else:
                record = results[0]
        except ConfigError as exc:
            record.status = "error"
            record.error = {"type": "ConfigError", "key": exc.key, "message": str(exc)}
            log.error("config_error", key=exc.key, message=str(exc))
        except Exception as exc:  # whatever breaks the run as a whole still leaves its record
            record.status = "error"
            record.error = {"type": type(exc).__name__, "message": str(exc)}
            log.exception("run_error")
        finish()
    return record
