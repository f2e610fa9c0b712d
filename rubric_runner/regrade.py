"""Grade saved transcripts again, with another grader or rubric, without re-running the worker."""

from __future__ import annotations

import json
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir

from .config import CONF_DIR, ConfigError, register_configs, validate
from .console import Console
from .runlog import CONFIG_ERROR_EXIT, EventLog, RunResult, read_result, saved_overrides, write_result
from .scripted import CURSOR_DIR
from .session import EVENTS_FILE, RESULT_FILE, TRANSCRIPT_FILE, complete, describe

USAGE = "usage: rubric-runner regrade RUN_DIR [OVERRIDES...]   e.g. grader=gpt or rubric.text='- ...'"


def task_dirs(run_dir: Path) -> list[Path]:
    """The dirs holding a transcript and a record: the run dir, or each task of a multi-task run."""
    if (run_dir / TRANSCRIPT_FILE).is_file():
        return [run_dir]
    return sorted(path.parent for path in run_dir.glob(f"tasks/*/{TRANSCRIPT_FILE}"))


def _compose(saved: list[str], overrides: list[str]):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=[*saved, *overrides])


def regrade_one(middleware: Any, task_dir: Path, rubric: str | None, recorder_factory) -> RunResult:
    """One grading pass over one saved transcript; the verdict as a record."""
    from langchain_core.messages import messages_from_dict
    from langchain_core.runnables import RunnableLambda
    from langgraph.runtime import Runtime

    original = read_result(task_dir / RESULT_FILE)
    messages = messages_from_dict(json.loads((task_dir / TRANSCRIPT_FILE).read_text(encoding="utf-8"))["messages"])
    text = rubric or (original.rubric.get("text") if original else None)
    result = RunResult(task_id=original.task_id if original else None, repeat=original.repeat if original else None)
    result.final_answer = original.final_answer if original else None
    result.rubric = {**(original.rubric if original else {}), "text": text}
    recorder = recorder_factory(result)
    recorder.attempt = result.final_answer
    state = {"messages": messages, "rubric": text, "_rubric_iterations": 0}
    grade = RunnableLambda(lambda s: middleware.after_agent(s, Runtime(stream_writer=recorder.on_stream_event)))
    # the run's thread: a scripted grader given the run's cursors continues its script there
    metadata = {"thread_id": original.thread_id} if original and original.thread_id else {}
    update = grade.invoke(state, config={"callbacks": [recorder], "metadata": metadata}) or {}
    result.evaluations = [dict(e) for e in update.get("_rubric_evaluations", [])]
    result.status = update.get("_rubric_status") or "error"
    result.iterations = len(result.evaluations)
    return result


def regrade(argv: list[str]) -> int:
    """``rubric-runner regrade RUN_DIR [OVERRIDES...]``: new records in ``RUN_DIR/regrades/<time>/``."""
    saved = saved_overrides(Path(argv[0])) if argv else None
    if saved is None:
        print(USAGE, file=sys.stderr)
        return CONFIG_ERROR_EXIT
    run_dir, overrides = Path(argv[0]).resolve(), argv[1:]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_dir = run_dir / "regrades" / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console()
    rubric_overridden = any(o.startswith(("rubric=", "rubric.text=")) for o in overrides)
    worst = 0
    with EventLog(out_dir / EVENTS_FILE) as log:
        try:
            config = validate(_compose(saved, overrides))
            from .agent import Shared
            from .recorder import Recorder

            if (run_dir / CURSOR_DIR / "grader").is_dir():  # a scripted grader's place in its script
                shutil.copytree(run_dir / CURSOR_DIR / "grader", out_dir / CURSOR_DIR / "grader", dirs_exist_ok=True)
            # one grading pass: no worker can revise, so needs_revision ends as max_iterations_reached
            middleware = Shared(config, out_dir, roles=("grader",)).rubric_middleware(None, max_iterations=1)
            (out_dir / "overrides.yaml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
            log.info("regrade_start", source=str(run_dir), grader=config.grader.model, overrides=overrides)
            console.line(f"regrade of {run_dir}: grader={config.grader.model} rubric={config.rubric.name}")
            for task_dir in task_dirs(run_dir):
                started = time.monotonic()
                target = out_dir / task_dir.relative_to(run_dir)
                target.mkdir(parents=True, exist_ok=True)

                def recorder_factory(result: RunResult) -> Recorder:
                    describe(config, result)
                    return Recorder(log, result, console, config.run.preview_chars)

                try:
                    result = regrade_one(middleware, task_dir, config.rubric.text if rubric_overridden else None, recorder_factory)
                except Exception as exc:  # one transcript's failure is its own record
                    result = RunResult(status="error", error={"type": type(exc).__name__, "message": str(exc)})
                result.run_dir, result.overrides, result.regraded_from = str(target), overrides, str(task_dir)
                complete(result, started)
                write_result(target / RESULT_FILE, result)
                log.info("regrade_end", task_dir=str(task_dir), status=result.status)
                console.line(f"{task_dir.relative_to(run_dir.parent)}: {result.status}")
                worst = max(worst, result.exit_code)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            log.error("config_error", key=exc.key, message=str(exc))
            return CONFIG_ERROR_EXIT
    console.line(f"regrade records: {out_dir}")
    return worst
