"""run(): one rubric run from validated config to result record, testable without Hydra."""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from .config import Config, ConfigError, validate
from .console import Console
from .models import is_scripted
from .runlog import CONFIG_ERROR_EXIT, EXIT_CODES, EventLog, RunResult, redact_override, scrub_sqlite, write_json, write_result

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
    grader = config.grader
    result.grader.update(max_iterations=grader.max_iterations, max_model_calls=grader.max_model_calls,
                         structured_output=grader.structured_output)
    result.rubric.update(name=config.rubric.name, text=config.rubric.text, task=config.rubric.task)
    result.tags = list(config.tags)


@contextlib.contextmanager
def _checkpointer(kind: str, run_dir: Path):
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        with SqliteSaver.from_conn_string(str(run_dir / CHECKPOINT_FILE)) as saver:
            yield saver
    finally:
        scrub_sqlite(run_dir / CHECKPOINT_FILE)


def _final_answer(messages: list[Any]) -> str | None:
    from langchain_core.messages import AIMessage

    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message.text
    return None


def _execute(config: Config, result: RunResult, run_dir: Path, log: Any, console: Console) -> None:
    from langchain_core.messages import HumanMessage, messages_to_dict

    from .agent import build_agent
    from .plugins import Plugins
    from .recorder import Recorder
    from .tools import ToolRegistry

    recorder = Recorder(log, result, console, config.run.preview_chars)
    registry = ToolRegistry(Plugins())
    with _checkpointer(config.run.checkpointer, run_dir) as checkpointer:
        agent = build_agent(config, registry, recorder.on_evaluation, checkpointer)
        run_config = {"configurable": {"thread_id": result.thread_id}, "callbacks": [recorder]}
        task = {"messages": [HumanMessage(config.rubric.task)], "rubric": config.rubric.text}
        try:
            for event in agent.stream(task, run_config, stream_mode="custom"):
                recorder.on_stream_event(event)
        finally:
            state = agent.get_state(run_config).values
            messages = state.get("messages", [])
            write_json(run_dir / TRANSCRIPT_FILE, {"thread_id": result.thread_id, "messages": messages_to_dict(messages)})
            result.final_answer = _final_answer(messages)
            result.iterations = int(state.get("_rubric_iterations") or 0)
            result.status = state.get("_rubric_status") or "error"
    if result.status == "error":
        result.error = {"type": "NoVerdict", "message": "the grader never returned a verdict"}


def run(cfg: DictConfig, run_dir: str | Path, overrides: list[str] | None = None) -> RunResult:
    """Run one rubric loop; write ``result.json``, ``events.jsonl`` and ``transcript.json``."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    result = RunResult(overrides=[redact_override(o) for o in overrides or []], run_dir=str(run_dir), started_at=_now())
    console = Console(enabled=bool(cfg.get("run", {}).get("console", True)))
    started = time.monotonic()
    with EventLog(run_dir / EVENTS_FILE) as log:
        try:
            config = validate(cfg)
            _describe(config, result)
            result.thread_id = config.run.thread_id or uuid.uuid4().hex
            write_result(run_dir / RESULT_FILE, result)
            log.info("run_start", worker=result.worker, grader=result.grader, rubric=config.rubric.name,
                     overrides=result.overrides, thread_id=result.thread_id)
            console.start(config.worker.model, config.grader.model, config.rubric.name,
                          result.worker["scripted"] or result.grader["scripted"])
            _execute(config, result, run_dir, log, console)
        except ConfigError as exc:
            result.status = "error"
            result.error = {"type": "ConfigError", "key": exc.key, "message": str(exc)}
            log.error("config_error", key=exc.key, message=str(exc))
        except KeyboardInterrupt:
            result.status = "interrupted"
            log.warning("interrupted")
        except Exception as exc:  # any failure of the run must still leave its record
            result.status = "error"
            result.error = {"type": type(exc).__name__, "message": str(exc)}
            log.exception("run_error")
        finally:
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
    return result
