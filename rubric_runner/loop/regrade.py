"""Grade a run's saved transcripts again, with another grader or rubric, without the worker.

A regrade is launched once per record dir that holds a run (a run dir, or one of its follow-up turns),
composed from that run's own config sources with the regrade's overrides on top; it grades each saved
transcript there once (its task's own tool settings in effect; against the checklist the run froze, unless
``grader.regrade_resplit`` or another rubric text), and records each pass as a task in the regrade dir's
``tasks/<id>-r<k>/``, as a run lays out its tasks. A repeat
grading (``--repeats``) is a launch of its own, in a dir of its own, whose scripted grader goes on in its
script from where the repeat before stood (so a script can give a transcript another verdict next time).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import messages_from_dict

from ..compat.deepagents import grade_once
from ..config.schema import OnCutView
from ..context import CURRENT_TASK, TaskContext, TaskRef
from ..grader.evidence import final_status
from ..grader.notes import TaskGrading
from ..observe.events import bind_task, unbind_task
from ..observe.recorder import Recorder
from ..records import (
    RESULT_FILE,
    TRANSCRIPT_FILE,
    RunRecord,
    Status,
    TaskRecord,
    TaskTally,
    now,
    write_record,
)
from ..tasks.sets import Task
from ..tasks.workspace import Workspace
from .agent import grader_middleware
from .cells import Cell
from .plan import Plan
from .signals import StopRequest, StopRequested
from .workspaces import attempt_name, files_at, kept, kept_seed


async def regrade(plan: Plan, record: RunRecord, log: Any, console: Any, source: Path,
                  stop: StopRequest | None = None) -> None:
    """One grading pass over each of the plan's cells (the transcripts of the run in ``source``), each
    recorded as a task of ``record``. Once ``stop`` is asked for, the transcripts not yet graded are recorded
    ``interrupted``."""
    # no worker can revise: needs_revision ends the pass; a workspace task's files are in the state graded
    middleware = grader_middleware(plan, max_iterations=1)
    tally = TaskTally(len(plan.cells))
    for index, cell in enumerate(plan.cells):
        transcript_dir, original = cell.graded, cell.ran
        assert transcript_dir is not None and original is not None, "a regrade's cells each grade a transcript"
        try:
            if stop is not None:
                stop.check()
            task = await _graded(plan, middleware, source, cell, transcript_dir, original, log, console)
        except StopRequested as exc:
            task = _not_graded(transcript_dir, original, cell.dir, str(exc))
            log.warning("interrupted", task_dir=str(transcript_dir), reason=str(exc))
        log.info("regrade_end", task_dir=str(transcript_dir), status=task.status)
        reason = f": {task.error.message}" if task.error is not None else ""
        console.line(f"{transcript_dir.relative_to(source.parent)}: {task.status}{reason}")
        tally.add(index, task)
    tally.fill(record, 1)


def _not_graded(transcript_dir: Path, original: TaskRecord, target: Path, reason: str) -> TaskRecord:
    """A transcript a stop left ungraded (``original``: its record as the run left it), recorded
    ``interrupted`` at ``target``."""
    result = TaskRecord(task_id=original.task_id, repeat=original.repeat or 0, task=original.task, thread_id=original.thread_id,
                        regraded_from=str(transcript_dir), run_dir=str(target), started_at=now())
    result.interrupt(reason)
    result.complete(time.monotonic())
    target.mkdir(parents=True, exist_ok=True)
    write_record(target / RESULT_FILE, result)
    return result


def saved_workspace(task: Task, original: TaskRecord, source: Path, transcript_dir: Path) -> tuple[Workspace, dict[str, str]]:
    """A workspace task's seed as the run in ``source`` kept it (the one its record ``original`` names, with the
    task's protected globs), and the worker's files as the last grading pass of the transcript in
    ``transcript_dir`` read them: that seed with the final changes kept there, deep agents' offloaded
    ``/large_tool_results/*`` among them."""
    if task.workspace is None:
        raise ValueError(f"task {task.id} has no workspace")
    seed = kept_seed(source, original.workspace_seed, task.id)
    try:
        files = files_at(transcript_dir, "final", seed)
    except FileNotFoundError:
        raise FileNotFoundError(f"{transcript_dir} keeps no final workspace (workspace/final/changes.json) for its grader to read") from None
    return Workspace(seed, task.workspace.protected), files


async def _graded(plan: Plan, middleware: Any, source: Path, cell: Cell, transcript_dir: Path, original: TaskRecord,
                  log: Any, console: Any) -> TaskRecord:
    """A cell's transcript (in ``transcript_dir``, its record as the run left it in ``original``) graded once,
    into a task record in the cell's dir; its failure is its own record. A task of a task set logs its events
    with its id and repeat, as in the run. A workspace task's grader reads the files the transcript's last pass
    read (``saved_workspace``), kept in the cell's dir as that pass's."""
    from deepagents.backends.utils import create_file_data

    started, task, target = time.monotonic(), cell.task, cell.dir
    # the answers and their hidden verification stay the original's: the truth a new verdict is measured against
    result = TaskRecord(task_id=original.task_id, repeat=original.repeat or 0, task=original.task, rubric=task.rubric,
                        final_answer=original.final_answer, first_answer=original.first_answer,
                        verification=original.verification, thread_id=original.thread_id,
                        regraded_from=str(transcript_dir), run_dir=str(target), started_at=now())
    target.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(log, result, console, plan.config.run.preview_chars)
    recorder.attempt = result.final_answer
    grading = TaskGrading(plan.config.grader, plan.strategy or "", task.rubric, log, console)
    ref = TaskRef(task.id, cell.repeat, str(target), original.thread_id)
    context = TaskContext(ref, task.tools, recorder, grading, workspace_diff_cap=plan.config.rubric.workspace_diff_max_bytes)
    token = CURRENT_TASK.set(context)
    bound = bind_task(task_id=result.task_id, repeat=result.repeat)
    try:
        messages = messages_from_dict(json.loads((transcript_dir / TRANSCRIPT_FILE).read_text(encoding="utf-8"))["messages"])
        fields = {}
        if task.workspace is not None:
            context.workspace, files = saved_workspace(task, original, source, transcript_dir)
            fields["files"] = {path: create_file_data(text) for path, text in files.items()}
        # the run's thread: a scripted grader given the run's cursors continues its script there
        metadata = {"thread_id": original.thread_id} if original.thread_id else {}
        node = plan.config.grader
        # the run's frozen checklist, graded again name for name (unless re-split, or the rubric is another)
        seeded = original.checklist if not node.regrade_resplit and original.rubric == task.rubric else None
        loop = await grade_once(middleware, messages, task.rubric, recorder.stream_event, {"metadata": metadata},
                                seeded, fields)
        result.checklist = loop.checklist
        result.status = final_status(Status.of_loop(loop.status), result.evaluations, node.strict_coverage,
                                     node.on_cut_view is OnCutView.fail)
        result.iterations = len(result.evaluations)
        graded = kept(target, attempt_name(1))  # the files this pass read, kept as a run's pass keeps them
        result.workspaces = [graded] if graded is not None else []
    except Exception as exc:  # one transcript's failure is its own record
        result.fail(exc)
        log.exception("regrade_error", task_dir=str(transcript_dir))
    finally:
        CURRENT_TASK.reset(token)
        unbind_task(bound)
    result.complete(started)
    write_record(target / RESULT_FILE, result)
    return result
