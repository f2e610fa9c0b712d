"""Grade saved transcripts again, with another grader or rubric, without re-running the worker."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from .config import ConfigError, compose, validate
from .console import Console
from .context import CURRENT_TASK, TaskContext
from .events import event_log
from .grading import TaskGrading, final_status
from .hydra_errors import describe
from .records import (
    EVENTS_FILE,
    RESULT_FILE,
    TRANSCRIPT_FILE,
    Evaluation,
    ExitCode,
    RunRecord,
    Status,
    read_record,
    saved_overrides,
    turn_dirs,
    write_record,
)
from .scripted import CURSOR_DIR
from .sandbox import isolation_setting


def task_dirs(run_dir: Path) -> list[Path]:
    """The dirs holding a transcript and a record: the run dir, or each task of a multi-task run,
    each followed by its follow-up turns."""
    found = [run_dir] if (run_dir / TRANSCRIPT_FILE).is_file() else sorted(
        path.parent for path in run_dir.glob(f"tasks/*/{TRANSCRIPT_FILE}"))
    return [turn for path in found for turn in [path, *turn_dirs(path)]]


def regrade_one(middleware: Any, task_dir: Path, rubric: str | None, template: RunRecord, recorder_factory,
                grading_factory) -> RunRecord:
    """One grading pass over one saved transcript; the verdict as a record."""
    from langchain_core.messages import messages_from_dict
    from langchain_core.runnables import RunnableLambda
    from langgraph.runtime import Runtime

    original = read_record(task_dir / RESULT_FILE) or RunRecord()
    messages = messages_from_dict(json.loads((task_dir / TRANSCRIPT_FILE).read_text(encoding="utf-8"))["messages"])
    text = rubric or original.rubric.text
    # the answers and their hidden verification stay the original's: the truth a new verdict is measured against
    result = template.model_copy(deep=True, update={"task_id": original.task_id, "repeat": original.repeat,
                                                    "turn": original.turn, "final_answer": original.final_answer,
                                                    "first_answer": original.first_answer,
                                                    "verification": original.verification})
    result.rubric.text, result.rubric.task = text, original.rubric.task or result.rubric.task
    recorder = recorder_factory(result)
    grading = grading_factory(text or "")
    recorder.attempt = result.final_answer
    state = {"messages": messages, "rubric": text, "_rubric_iterations": 0}
    grade = RunnableLambda(lambda s: middleware.after_agent(s, Runtime(stream_writer=recorder.on_stream_event)))
    # the run's thread: a scripted grader given the run's cursors continues its script there
    metadata = {"thread_id": original.thread_id} if original.thread_id else {}
    token = CURRENT_TASK.set(TaskContext(result.task_id or "task", recorder=recorder, grading=grading))
    try:
        update = grade.invoke(state, config={"callbacks": [recorder], "metadata": metadata}) or {}
    finally:
        CURRENT_TASK.reset(token)
    evaluations = [dict(e) for e in update.get("_rubric_evaluations", [])]
    for evaluation in evaluations:
        grading.annotate(evaluation)
    result.evaluations = [Evaluation.model_validate(e) for e in evaluations]
    result.status = final_status(Status.of_loop(update.get("_rubric_status")), result.evaluations, grading.node.strict_coverage)
    result.iterations = len(result.evaluations)
    return result


def main(args: argparse.Namespace) -> int:
    """``rubric-runner regrade RUN_DIR [OVERRIDES...]``: new records in ``RUN_DIR/regrades/<time>/``."""
    run_dir, overrides = args.run_dir, list(args.overrides)
    try:
        config = validate(compose([*(saved_overrides(run_dir) or []), *overrides]))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here
        print(f"error: {describe(exc, overrides)}", file=sys.stderr)
        return ExitCode.USAGE
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_dir = run_dir / "regrades" / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console()
    rubric_overridden = any(o.startswith(("rubric=", "rubric.text=")) for o in overrides)
    worst = 0
    with event_log(out_dir / EVENTS_FILE) as log:
        try:
            from .agent import AgentFactory, note_what_ran
            from .recorder import Recorder, sandbox_notices

            if (run_dir / CURSOR_DIR / "grader").is_dir():  # a scripted grader's place in its script
                shutil.copytree(run_dir / CURSOR_DIR / "grader", out_dir / CURSOR_DIR / "grader", dirs_exist_ok=True)
            # one grading pass: no worker can revise, so needs_revision ends as max_iterations_reached
            factory = AgentFactory(config, out_dir, roles=("grader",))
            middleware = factory.rubric_middleware(None, max_iterations=1)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            log.error("config_error", key=exc.key, message=str(exc))
            return ExitCode.USAGE
        (out_dir / "overrides.yaml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
        log.info("regrade_start", source=str(run_dir), grader=config.grader.model, overrides=overrides)
        console.line(f"regrade of {run_dir}: grader={config.grader.model} rubric={config.rubric.name}")
        template = RunRecord()
        note_what_ran(template, config)
        factory.note_strategy(template.grader)
        notices = sandbox_notices(log, console)
        for task_dir in task_dirs(run_dir):
            started = time.monotonic()
            target = out_dir / task_dir.relative_to(run_dir)
            target.mkdir(parents=True, exist_ok=True)

            def recorder_factory(result: RunRecord) -> Recorder:
                return Recorder(log, result, console, config.run.preview_chars)

            def grading_factory(text: str) -> TaskGrading:
                return TaskGrading(config.grader, factory.strategy, text, log, console)

            try:
                with isolation_setting(config.sandbox.isolation, notices):
                    result = regrade_one(middleware, task_dir, config.rubric.text if rubric_overridden else None,
                                         template, recorder_factory, grading_factory)
            except Exception as exc:  # one transcript's failure is its own record
                result = RunRecord()
                result.fail(exc)
            result.run_dir, result.overrides, result.regraded_from = str(target), overrides, str(task_dir)
            result.complete(started)
            write_record(target / RESULT_FILE, result)
            log.info("regrade_end", task_dir=str(task_dir), status=result.status)
            console.line(f"{task_dir.relative_to(run_dir.parent)}: {result.status}")
            worst = max(worst, result.exit_code)
    console.line(f"regrade records: {out_dir}")
    return worst
