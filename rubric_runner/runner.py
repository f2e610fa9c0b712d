"""run(): one rubric run from validated config to result record, testable without Hydra."""

from __future__ import annotations

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

from omegaconf import DictConfig

from .config import Config, ConfigError, validate
from .console import Console
from .models import is_scripted
from .runlog import (
    CONFIG_ERROR_EXIT,
    EXIT_CODES,
    TERMINAL_STATUSES,
    EventLog,
    RunResult,
    read_result,
    write_json,
    write_result,
)

RESULT_FILE = "result.json"
EVENTS_FILE = "events.jsonl"
TRANSCRIPT_FILE = "transcript.json"
CHECKPOINT_FILE = "checkpoints.sqlite"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _describe(config: Config, result: RunResult) -> None:
    for role in ("worker", "grader"):
        node = getattr(config, role)
        getattr(result, role).update(
            model=node.model, scripted=is_scripted(node), tools=sorted(node.tools)
        )
    result.grader["max_iterations"] = config.grader.max_iterations
    result.rubric.update(name=config.rubric.name, text=config.rubric.text, task=config.rubric.task)
    result.tags = list(config.tags)


class StopRequest:
    """SIGINT/SIGTERM handling for a run.

    The first signal asks the run to stop at the next checkpoint, so no finished
    step is lost. A second one calls ``stop_now`` (which records the run as
    interrupted) and exits with 130 at once; the step in flight is redone on resume.
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
        """Raise KeyboardInterrupt at a step boundary if a stop was asked for."""
        if self.signal_name is not None:
            raise KeyboardInterrupt(f"{self.signal_name}: stopped at a checkpoint")

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


@contextlib.contextmanager
def _checkpointer(kind: str, run_dir: Path):
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(run_dir / CHECKPOINT_FILE)) as saver:
        yield saver


def _final_answer(messages: list[Any]) -> str | None:
    from langchain_core.messages import AIMessage

    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message.text
    return None


def _execute(
    config: Config, result: RunResult, run_dir: Path, log: Any, console: Console, stop: StopRequest
) -> None:
    from langchain_core.messages import HumanMessage, messages_to_dict

    from .agent import build_agent
    from .plugins import Plugins
    from .recorder import Recorder
    from .tools import ToolRegistry

    recorder = Recorder(log, result, console, config.run.preview_chars, lambda: write_result(run_dir / RESULT_FILE, result))
    registry = ToolRegistry(Plugins())
    with _checkpointer(config.run.checkpointer, run_dir) as checkpointer:
        agent = build_agent(config, registry, recorder.on_evaluation, checkpointer, run_dir)
        run_config = {"configurable": {"thread_id": result.thread_id}, "callbacks": [recorder]}
        task: dict[str, Any] | None = {"messages": [HumanMessage(config.rubric.task)], "rubric": config.rubric.text}
        if result.resumed and agent.get_state(run_config).next:
            task = None  # continue the interrupted step from the last checkpoint
            log.info("run_resumed", thread_id=result.thread_id, resumed=result.resumed)
        try:
            stream = agent.stream(task, run_config, stream_mode=["custom", "checkpoints"], durability="sync")
            for mode, chunk in stream:
                if mode == "custom":
                    recorder.on_stream_event(chunk)
                else:
                    stop.check()
        finally:
            state = agent.get_state(run_config).values
            messages = state.get("messages", [])
            write_json(run_dir / TRANSCRIPT_FILE, {"thread_id": result.thread_id, "messages": messages_to_dict(messages)})
            result.final_answer = _final_answer(messages)
            result.iterations = int(state.get("_rubric_iterations") or 0)
            result.status = state.get("_rubric_status") or "error"
            if state.get("_rubric_evaluations"):  # the checkpoint is the truth, also across resumes
                run_id = state.get("_current_grading_run_id")
                result.evaluations = [e for e in state["_rubric_evaluations"] if e["grading_run_id"] == run_id]
    if result.status == "error":
        result.error = {"type": "NoVerdict", "message": "the grader never returned a verdict"}


def _start(config: Config, result: RunResult, run_dir: Path) -> RunResult | None:
    """Fill in the record's start; on resume, carry over the previous record or return it if complete."""
    previous = read_result(run_dir / RESULT_FILE) if config.run.resume else None
    if previous is not None and previous.status in TERMINAL_STATUSES:
        return previous
    if previous is not None:
        result.evaluations, result.usage = previous.evaluations, previous.usage
        result.resumed = previous.resumed + 1
        result.thread_id = previous.thread_id
    result.thread_id = config.run.thread_id or result.thread_id or uuid.uuid4().hex
    return None


def run(cfg: DictConfig, run_dir: str | Path, overrides: list[str] | None = None) -> RunResult:
    """Run one rubric loop; write ``result.json``, ``events.jsonl`` and ``transcript.json``.

    With ``run.resume=true`` and a record already in ``run_dir``, a complete run is
    left as it is and an interrupted or failed one continues from its checkpoint.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    result = RunResult(overrides=list(overrides or []), run_dir=str(run_dir), started_at=_now())
    console = Console(enabled=bool(cfg.get("run", {}).get("console", True)))
    started = time.monotonic()

    def finish() -> None:
        """Complete and write the record, however the run ended."""
        result.exit_code = (
            CONFIG_ERROR_EXIT if result.error and result.error["type"] == "ConfigError" else EXIT_CODES.get(result.status, 3)
        )
        result.ended_at = _now()
        result.wall_seconds = round(time.monotonic() - started, 3)
        if result.status == "grader_error" and result.evaluations:
            result.error = {"type": "GraderError", "message": result.evaluations[-1].get("explanation", "")}
        write_result(run_dir / RESULT_FILE, result)
        log.info("run_end", status=result.status, exit_code=result.exit_code, iterations=result.iterations,
                 usage={k: asdict(v) for k, v in result.usage.items()}, wall_seconds=result.wall_seconds)
        console.finish(result.status, result.iterations, str(run_dir), result.error and result.error["message"])

    def stop_now(reason: str) -> None:
        result.status = "interrupted"
        result.error = {"type": "KeyboardInterrupt", "message": reason}
        log.warning("interrupted", reason=reason)
        finish()

    with EventLog(run_dir / EVENTS_FILE) as log, StopRequest(console, stop_now).installed() as stop:
        try:
            config = validate(cfg)
            _describe(config, result)
            complete = _start(config, result, run_dir)
            if complete is not None:
                log.info("run_already_complete", status=complete.status)
                console.line(f"already complete: {complete.status} (nothing to resume)")
                return complete
            write_result(run_dir / RESULT_FILE, result)
            log.info("run_start", worker=result.worker, grader=result.grader, rubric=config.rubric.name,
                     overrides=result.overrides, thread_id=result.thread_id, resumed=result.resumed)
            console.start(config.worker.model, config.grader.model, config.rubric.name,
                          result.worker["scripted"] or result.grader["scripted"])
            _execute(config, result, run_dir, log, console, stop)
        except ConfigError as exc:
            result.status = "error"
            result.error = {"type": "ConfigError", "key": exc.key, "message": str(exc)}
            log.error("config_error", key=exc.key, message=str(exc))
        except KeyboardInterrupt as exc:
            result.status = "interrupted"
            result.error = {"type": "KeyboardInterrupt", "message": str(exc) or "interrupted"}
            log.warning("interrupted", reason=str(exc) or "SIGINT")
        except Exception as exc:  # any failure of the run must still leave its record
            result.status = "error"
            result.error = {"type": type(exc).__name__, "message": str(exc)}
            log.exception("run_error")
        finish()
    return result
