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

from ..analysis.prices import PriceError, load_prices
from ..config.compose import compose
from ..config.hydra_errors import describe
from ..config.schema import Config
from ..config.validate import validate
from ..context import CURRENT_TASK, TaskContext
from ..errors import ConfigError
from ..grader.middleware import TaskGrading, final_status
from ..models.scripted import CURSOR_DIR
from ..observe.console import Console
from ..observe.events import event_log
from ..records import (
    EVENTS_FILE,
    REGRADES_DIR,
    RESULT_FILE,
    TRANSCRIPT_FILE,
    Evaluation,
    ExitCode,
    RunRecord,
    Status,
    collect,
    find_run_dirs,
    read_record,
    saved_overrides,
    turn_dirs,
    write_record,
)
from ..sandbox import isolation_setting

MULTIRUN_FLAGS = ("-m", "--multirun")


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


def graders(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The graders to regrade with, as override lists: with ``multirun``, each combination of the
    overrides' values, as a Hydra sweep makes them (``grader=haiku,gpt``); else the overrides as given."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    if multirun:
        return [combination for batch in BasicSweeper.split_arguments(parsed, None) for combination in batch]
    swept = next((override for override in parsed if override.is_sweep_override()), None)
    if swept is not None:
        raise ConfigError(swept.get_key_element(), "several values are a regrade with each, which needs -m",
                          f"rubric-runner regrade RUN_DIR -m {swept.input_line}")
    return [overrides]


def source_runs(root: Path) -> list[Path]:
    """The run dirs under ``root`` (itself, or each job of a sweep) with the overrides Hydra saved for them."""
    return [run_dir for run_dir in find_run_dirs(root) if saved_overrides(run_dir) is not None]


def regrade_with(out_dir: Path, root: Path, sources: list[tuple[Path, Config]], overrides: list[str],
                 console: Console) -> list[RunRecord]:
    """Regrade every transcript of ``sources`` (each run dir with its config) into ``out_dir``, laid out
    as under ``root``; returns the new records. A config error (a missing key) is logged and raised."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rubric_overridden = any(o.startswith(("rubric=", "rubric.text=")) for o in overrides)
    results = []
    with event_log(out_dir / EVENTS_FILE) as log:
        (out_dir / "overrides.yaml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
        from ..observe.recorder import Recorder, sandbox_notices
        from .agent import AgentFactory, note_what_ran

        notices = sandbox_notices(log, console)
        for run_dir, config in sources:
            if (run_dir / CURSOR_DIR / "grader").is_dir():  # a scripted grader's place in its script
                shutil.copytree(run_dir / CURSOR_DIR / "grader", out_dir / CURSOR_DIR / "grader", dirs_exist_ok=True)
            try:
                # one grading pass: no worker can revise, so needs_revision ends as max_iterations_reached
                factory = AgentFactory(config, out_dir, roles=("grader",))
                middleware = factory.rubric_middleware(None, max_iterations=1)
            except ConfigError as exc:
                log.error("config_error", key=exc.key, message=str(exc))
                raise
            log.info("regrade_start", source=str(run_dir), grader=config.grader.model, overrides=overrides)
            console.line(f"regrade of {run_dir}: grader={config.grader.model} rubric={config.rubric.name}")
            template = RunRecord()
            note_what_ran(template, config)
            factory.note_strategy(template.grader)

            def recorder_factory(result: RunRecord, config: Config = config) -> Recorder:
                return Recorder(log, result, console, config.run.preview_chars)

            def grading_factory(text: str, config: Config = config, factory: AgentFactory = factory) -> TaskGrading:
                return TaskGrading(config.grader, factory.strategy, text, log, console)

            for task_dir in task_dirs(run_dir):
                started = time.monotonic()
                target = out_dir / task_dir.relative_to(root)
                target.mkdir(parents=True, exist_ok=True)
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
                console.line(f"{task_dir.relative_to(root.parent)}: {result.status}")
                results.append(result)
    return results


def ranking_lines(records: list[RunRecord], prices: dict[str, dict[str, float]]) -> list[str]:
    """The graders ranked by their errors against the answers' hidden verification; none when nothing was verified."""
    from ..analysis.judge import grader_key, grader_label, judge_groups, ranked

    ranking = ranked(judge_groups(records, grader_key, prices))
    lines = ["graders ranked by error against hidden verification:"] if ranking else []
    for place, (key, j) in enumerate(ranking, 1):
        lines.append(f"  {place}. {grader_label(key)}: error {j.error}; false satisfied {j.false_satisfied}; "
                     f"false rejection {j.false_rejection}; unverifiable {j.unverifiable}")
    return lines


def _new_regrade_dir(parent: Path) -> Path:
    """A new dir in ``parent`` named by the time, ``-2``, ``-3``, ... added when another regrade made one in
    the same second (making it is atomic, so regrades started at once never share one)."""
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_dir, number = parent / stamp, 1
    while True:
        try:
            out_dir.mkdir()
            return out_dir
        except FileExistsError:
            number += 1
            out_dir = parent / f"{stamp}-{number}"


def main(args: argparse.Namespace) -> int:
    """``rubric-runner regrade DIR [-m] [OVERRIDES...]``: new records in ``DIR/regrades/<time>/`` (with
    ``-m``, one numbered dir per grader, and the reports ranking them)."""
    root = args.run_dir
    overrides = [o for o in args.overrides if o not in MULTIRUN_FLAGS]
    multirun = args.multirun or any(o in MULTIRUN_FLAGS for o in args.overrides)
    runs = source_runs(root)
    try:
        combinations = graders(overrides, multirun)
        configs = [[(run_dir, validate(compose([*saved_overrides(run_dir), *combination]))) for run_dir in runs]
                   for combination in combinations]
        prices_path = configs[0][0][1].sweep.prices if runs else None
        prices = load_prices(prices_path)
    except (ConfigError, PriceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here
        print(f"error: {describe(exc, overrides)}", file=sys.stderr)
        return ExitCode.USAGE
    if not any(task_dirs(run_dir) for run_dir in runs):
        print(f"error: RUN_DIR: {root} holds no saved transcript (give the dir of a run or sweep that has run)", file=sys.stderr)
        return ExitCode.USAGE
    out_dir = _new_regrade_dir(root / REGRADES_DIR)
    console = Console()
    records = []
    for index, (combination, sources) in enumerate(zip(combinations, configs)):
        try:
            records += regrade_with(out_dir / str(index) if multirun else out_dir, root, sources, combination, console)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return ExitCode.USAGE
    for line in ranking_lines(records, prices):
        console.line(line)
    if multirun:
        from ..report import write_all

        write_all(out_dir, collect(out_dir), prices=prices_path)
    console.line(f"regrade records: {out_dir}")
    return max((record.exit_code for record in records), default=0)
