"""Jobs expanded into the runs the reports count: a job is its tasks x repeats.

This is the one place that does it; the summary files, both reports, the sweep's exit code and
``fail_under`` all count what ``expand`` returns. A job's runs are the records in its ``tasks/`` dir,
in its record's task order (or by name, while it runs or after it crashed; a version 1 or 2 run of one
task is one run, its own record); a task that left no record still counts, in error. A job
that ended before any task began (a config error, a crash at its start) has no run: it is a job that
did not start (``unstarted``), never a task.

A ``Run`` keeps what the reports read of its record, taken as the record is read, and not the record:
a report of 10,000 tasks holds 10,000 of these at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.agreement import Rating
from ..analysis.judge import VERDICTS, Judged, Judgement, judge_all, one_pass
from ..analysis.loop_value import Attempts
from ..analysis.prices import Billed, billed, cost_of
from ..paths import Resolver
from ..records import (
    UNFINISHED,
    CheckOutcome,
    Job,
    LimitHit,
    RunHeader,
    RunKind,
    RunRecord,
    Status,
    TaskRecord,
    load_task,
    read_task_at,
    task_dirs,
    task_key,
)
from ..records.store import gc_paused
from . import configs
from .trails import script_json, trail, workspace_diffs

TASK_CHARS = 80
"""A task with no id (the rubric's own message) is named by its message, cut to this many characters."""


def task_row(header: RunHeader, record: TaskRecord) -> dict[str, Any]:
    """What ran and how a task ended, as the summary files give it."""
    usage, error = record.usage, record.error
    return {
        "worker": header.worker.model,
        "grader": header.grader.model,
        "rubric": header.rubric.name,
        "turn": header.turn or 1,
        "exit_code": record.exit_code,
        "iterations": record.iterations,
        "worker_tokens": usage["worker"].total_tokens if "worker" in usage else 0,
        "grader_tokens": usage["grader"].total_tokens if "grader" in usage else 0,
        "cache_hits": sum(counts.cached_calls for counts in usage.values()),
        "wall_seconds": record.wall_seconds,
        "resumed": record.resumed,
        "error": f"{error.type}: {error.message}" if error else "",
        "run_dir": record.run_dir,
        "verified_first": record.verified("first"),
        "verified_final": record.verified("final"),
    }


Criteria = tuple[tuple[str, bool], ...]
"""A grading pass's criteria: (name, passed) each, names stripped."""


@dataclass(frozen=True, slots=True)
class Run:
    """One task x repeat of a job, as the reports count it: ``task_row``'s
    fields, and what the tables, the judgement and the trail read of the record."""

    index: int
    job: Job
    reused: bool
    """A resumed run or sweep kept this run as it was."""
    task: str
    """The task's id; for a task with none (the rubric's own message), the message (whitespace collapsed, cut to
    ``TASK_CHARS``), or ``-``. Runs with the same task and rubric are the same task."""
    task_id: str | None
    repeat: int | None
    group: str
    """``configs.group_key`` of the job: runs of one configuration."""
    grader_key: str
    """``configs.grader_key`` of the job: who judged the run."""
    status: Status
    worker: str | None
    grader: str | None
    rubric: str | None
    turn: int
    exit_code: int | None
    iterations: int
    worker_tokens: int
    grader_tokens: int
    cache_hits: int
    wall_seconds: float | None
    resumed: int
    error: str
    run_dir: str | None
    verified_first: bool | None
    verified_final: bool | None
    verified_outcome: CheckOutcome | None
    """The final answer's verification outcome; None when it was not verified."""
    first_outcome: CheckOutcome | None
    max_iterations: int
    verdicts: tuple[str, ...]
    """Each grading pass's verdict."""
    criteria: tuple[Criteria, Criteria] | None
    """The first and the final pass that graded criteria; None when none did."""
    billed: Billed
    transcript: str | None
    """The transcript judged: a regrade's is its original's dir, a run's its own."""
    transcript_billed: Billed | None
    """A regrade's: what its transcript's worker was billed (None when the original is not found);
    a run's: nothing to add, ``()``."""
    limit: LimitHit | None
    started_at: str | None
    ended_at: str | None
    trail: str
    """The verdict trail report.html draws (``trails.trail``), as page-safe JSON."""
    arm: str = "rubric"
    """``loop.arm``: rubric, resample or single."""
    pairing: str = ""
    """``configs.pairing_key``: runs of arms to compare share it."""
    checked: tuple[bool | None, ...] = ()
    """Each attempt's hidden checks: passed, failed, or None (not checked, or unverifiable)."""
    failed_checks: tuple[str, ...] = ()
    """The final answer's failed hidden checks, one line each (``Verification.failures``)."""
    spent: tuple[Billed, ...] = ()
    """What the run was billed when each pass ended; empty when its record does not say."""
    pass_criteria: tuple[Criteria, ...] = ()
    """Each grading pass's criteria."""
    unverified: tuple[bool, ...] = ()
    """Each grading pass: whether the library marked its verdict unverified."""
    cut: tuple[bool | None, ...] = ()
    """Each grading pass: whether the grader saw a cut view of the transcript; None when its record does not say."""
    one_pass: bool = False
    """Its configuration allows one grading pass (``judge.one_pass``): its first answer is its final one."""
    policy: tuple[str, str] = ("last", "none")
    """``configs.policy``: its ``loop.returns`` and ``loop.stop``."""
    siblings: str = ""
    """``configs.pairing_key`` but the policy's keys: runs of one loop under other policies share it."""
    workspaces: tuple[dict[str, Any], ...] = ()
    """A workspace task's: each attempt's diff, then the final one's (``trails.workspace_diffs``)."""

    @property
    def finished(self) -> bool:
        """Whether the run finished (see ``Status.unfinished``)."""
        return not self.status.unfinished

    @property
    def task_key(self) -> tuple[str, str]:
        """(rubric, task): what makes two runs the same task (a follow-up turn's rubric as ``code (turn 2)``)."""
        rubric = self.rubric or "?"
        return f"{rubric} (turn {self.turn})" if self.turn > 1 else rubric, self.task

    def cost(self, prices: dict[str, dict[str, float]]) -> float | None:
        """Estimated USD of the run; None when a model has no price."""
        return cost_of(self.billed, prices)

    def judged(self, prices: dict[str, dict[str, float]]) -> Judged:
        """What a judgement reads of the run: a regrade's spend includes its transcript's worker."""
        own = self.cost(prices)
        extra = self.transcript_billed
        if extra is None:
            tokens, cost = None, None
        else:
            extra_cost = cost_of(extra, prices) if extra else 0.0
            tokens = self.worker_tokens + self.grader_tokens + sum(i + o for _, i, o in extra)
            cost = None if own is None or extra_cost is None else own + extra_cost
        return Judged(
            status=self.status, verified_first=self.verified_first, verified_final=self.verified_final,
            verified_outcome=self.verified_outcome, tokens=tokens, cost=cost, task=self.task_key,
            transcript=self.transcript, unverified=bool(self.unverified) and self.unverified[-1], one_pass=self.one_pass,
        )

    def rating(self, grader: str, resolved: Resolver) -> Rating:
        """The run as one grading of its transcript, as the agreement figures read it: its final verdict and,
        when it gave one, that pass's criteria; the transcript by its real path."""
        verdict = VERDICTS.get(self.status)
        criteria = self.criteria[1] if self.criteria and verdict is not None else ()
        return Rating(grader, resolved(self.transcript) if self.transcript else "", verdict, criteria,
                      self.verified_final, self.task_key, status=None if verdict is not None else self.status,
                      first_checked=self.verified_first)

    def attempted(self, prices: dict[str, dict[str, float]]) -> Attempts:
        """What the loop's value reads of the run."""
        spent = tuple((sum(i + o for _, i, o in bill), cost_of(bill, prices)) for bill in self.spent)
        return Attempts(
            index=self.index, group=self.group, arm=self.arm, pairing=self.pairing, task=self.task_key, repeat=self.repeat,
            checked=self.checked, final_checked=self.verified_final,
            satisfied=tuple(None if verdict == Status.GRADER_ERROR else verdict == Status.SATISFIED for verdict in self.verdicts),
            final_satisfied=self.status is Status.SATISFIED if self.status.decided else None,
            tokens=self.worker_tokens + self.grader_tokens, cost=self.cost(prices), spent=spent, criteria=self.pass_criteria,
            unverified=self.unverified, verdicts=self.verdicts, cap=self.max_iterations,
            returns=self.policy[0], stop=self.policy[1], siblings=self.siblings,
        )


def judge_runs(runs: list[Run], prices: dict[str, dict[str, float]]) -> Judgement | None:
    """The judgement of ``runs``; None when none of them was verified."""
    if all(run.verified_outcome is None for run in runs):
        return None
    return judge_all([run.judged(prices) for run in runs])


class _Shared(dict):
    """One object for equal values across runs (models, criteria, verdicts, groups): 10,000 runs hold few copies."""

    def __call__(self, value: Any) -> Any:
        return self.setdefault(value, value)


def _criteria(record: TaskRecord, shared: _Shared) -> tuple[Criteria, Criteria] | None:
    graded = [e for e in record.evaluations if e.criteria]
    if not graded:
        return None
    first, final = ((shared((shared(c.name.strip()), c.passed)) for c in e.criteria) for e in (graded[0], graded[-1]))
    return shared(tuple(first)), shared(tuple(final))


def _transcript_billed(header: RunHeader, record: TaskRecord) -> Billed | None:
    """What the worker of a regrade's transcript was billed, from the original record (``()`` for a run)."""
    if not record.regraded_from:
        return ()
    original = read_task_at(Path(record.regraded_from))
    if original is None:
        return None
    usage = original.usage.get("worker")
    return ((header.worker.model, usage.input_tokens, usage.output_tokens),) if usage else ()


def _run(index: int, job: Job, record: TaskRecord, reused: bool, keys: tuple[Any, ...], shared: _Shared) -> Run:
    header = job.record.header
    message = " ".join((record.task or header.rubric.task or "").split()) or "-"
    task = record.task_id or (message if len(message) <= TASK_CHARS else message[:TASK_CHARS] + "\u2026")
    verification = record.verification
    final = verification.final if verification else None
    first = verification.first if verification else None
    row = task_row(header, record)
    for key in ("worker", "grader", "rubric"):
        row[key] = shared(row[key])
    regrade = header.kind is RunKind.REGRADE
    diffs = workspace_diffs(record)
    return Run(
        index=index, job=job, reused=reused, task=task, task_id=record.task_id, repeat=record.repeat,
        group=keys[0], grader_key=keys[1], **row, status=record.status,
        verified_outcome=final.outcome if final else None, first_outcome=first.outcome if first else None,
        max_iterations=header.grader.max_iterations or 0,
        verdicts=shared(tuple(shared(e.result) for e in record.evaluations)), criteria=_criteria(record, shared),
        billed=billed(header, record.usage), transcript=record.regraded_from if regrade else record.run_dir,
        transcript_billed=_transcript_billed(header, record) if regrade else (),
        limit=record.limit, started_at=record.started_at, ended_at=record.ended_at,
        trail=script_json(trail(header, record, diffs)), workspaces=tuple(diffs),
        arm=keys[2], pairing=keys[3],
        checked=tuple(a.verification.passed if a.verification else None for a in record.verified_attempts),
        failed_checks=tuple(final.failures()) if final else (),
        spent=_spent(header, record),
        pass_criteria=shared(tuple(shared(tuple(shared((shared(c.name.strip()), c.passed)) for c in e.criteria))
                                   for e in record.evaluations)),
        unverified=shared(tuple(e.unverified for e in record.evaluations)),
        cut=shared(tuple(None if e.view is None else e.view.is_cut for e in record.evaluations)),
        one_pass=one_pass(header), policy=keys[4], siblings=keys[5],
    )


def _spent(header: RunHeader, record: TaskRecord) -> tuple[Billed, ...]:
    """What the run was billed when each pass ended; empty when a pass's record does not say."""
    if not record.evaluations or any(e.spent is None for e in record.evaluations):
        return ()
    return tuple(billed(header, e.spent) for e in record.evaluations)


def _task_order(name: str) -> tuple[str, int]:
    task, _, repeat = name.rpartition("-r")
    return task, int(repeat) if repeat.isdigit() else -1


def _task_record(name: str, task_dir: str, live: bool) -> TaskRecord:
    """A task's record, where it is now."""
    record = load_task(task_dir)
    if record.repeat is None:  # no record to say (a task whose record is missing or unreadable)
        record.task_id, record.repeat = _task_order(name)
    record.run_dir = task_dir
    _mark_running(record, live)
    return record


def _mark_running(record: RunRecord | TaskRecord, live: bool) -> None:
    """In a report of runs still going, a record that says ``running`` is one, not a crash."""
    if live and record.error is not None and record.error.type == UNFINISHED:
        record.status, record.error, record.exit_code = Status.RUNNING, None, None


@gc_paused()
def expand(jobs: list[Job], live: bool = False) -> list[Run]:
    """Every run of ``jobs``: each task x repeat of a job; a job that no task of began has none.

    ``live``: the jobs may still be going, so records that still say ``running`` are shown as such.
    """
    runs: list[Run] = []
    shared = _Shared()
    for job in jobs:
        _mark_running(job.record, live)
        header = job.record.header
        keys = (shared(configs.group_key(header)), shared(configs.grader_key(header)),
                shared(configs.arm(header)), shared(configs.pairing_key(header)), shared(configs.policy(header)),
                shared(configs.pairing_key(header, configs.POLICY_KEYS)))
        inline = job.record.inline_task
        if inline is not None:  # a version 1 or 2 run of one task: its record is the run's own
            _mark_running(inline, live)
            runs.append(_run(len(runs), job, inline, bool(job.reused), keys, shared))
            continue
        every = job.reused >= max(len(job.record.tasks), 1)  # the job as a whole was kept from a sweep before
        reused = {task_key(row.task_id, row.repeat) for row in job.record.tasks if row.reused}
        for path in task_dirs(job.record):
            name, task_dir = path.name, str(path)
            record = _task_record(name, task_dir, live)
            runs.append(_run(len(runs), job, record, every or name in reused, keys, shared))
    return runs


def unstarted(jobs: list[Job], runs: list[Run]) -> list[Job]:
    """The jobs that ended before any of their tasks began (a config error, a crash at the start)."""
    started = {id(run.job) for run in runs}
    return [job for job in jobs if id(job) not in started and job.record.status is not Status.RUNNING]
