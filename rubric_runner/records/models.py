"""The records a run writes (``result.json``), as pydantic models that both write and read them.

``schema_version`` changes when a field is renamed, removed, or changes meaning or type; adding an
optional field (with a default, so older records still read) keeps the version. Readers ignore
fields they do not know, so a record written by a newer version still reads.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .status import ExitCode, Status

SCHEMA_VERSION = 1
ATTEMPT_CHARS = 8000
"""The most characters of each graded answer a record keeps in ``attempts``."""


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _omitted_when_none(value: Any) -> bool:
    return value is None


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Usage(_Model):
    """Token counts of one model role."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_calls: int = 0
    """Calls answered from ``run.cache`` (no tokens)."""

    def add(self, usage: dict[str, Any] | None, cached: bool = False) -> None:
        """Count one model call and its ``usage_metadata``; a cache hit costs no tokens."""
        if cached:
            self.cached_calls += 1
            return
        self.calls += 1
        usage = usage or {}
        self.input_tokens += int(usage.get("input_tokens") or 0)
        self.output_tokens += int(usage.get("output_tokens") or 0)
        self.total_tokens += int(usage.get("total_tokens") or 0)

    def merge(self, other: Usage) -> None:
        """Add another count to this one."""
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _usage() -> dict[str, Usage]:
    return {"worker": Usage(), "grader": Usage()}


class Criterion(_Model):
    """One criterion's verdict in a grading pass."""

    name: str
    passed: bool
    gap: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """What is missing, on a failing criterion."""


class Unsupported(_Model):
    """A verdict that rests on evidence its grading pass never gathered."""

    missing: list[str]
    """The grader tools the verdict rests on that the pass never called."""


class Coverage(_Model):
    """How a verdict's criteria miss the rubric's lines."""

    lines: int
    """The rubric's criteria (its non-empty lines)."""
    criteria: int
    """The criteria the verdict gave."""
    uncovered: list[str] = Field(default_factory=list)
    """Rubric lines no criterion matches."""
    other: list[str] = Field(default_factory=list)
    """Criteria that match no rubric line."""


class Evaluation(_Model):
    """One grading pass, as ``RubricMiddleware`` reports it, with what the runner noted about it."""

    grading_run_id: str | None = None
    iteration: int = 0
    result: str
    """satisfied, needs_revision, failed, max_iterations_reached or grader_error."""
    explanation: str = ""
    criteria: list[Criterion] = Field(default_factory=list)
    unsupported: Unsupported | None = Field(default=None, exclude_if=_omitted_when_none)
    """Set when the verdict came back, after being sent back once, still without its evidence."""
    coverage: Coverage | None = Field(default=None, exclude_if=_omitted_when_none)
    """Set when the criteria are fewer than the rubric's lines or do not match them."""
    grader_said: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """On a grader_error: what the grader answered instead of a verdict (bounded)."""


class ErrorInfo(_Model):
    """Why a run ended in error or was interrupted."""

    type: str
    message: str
    key: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """The config key, for a ``ConfigError``."""

    @classmethod
    def of(cls, exc: BaseException, type_name: str | None = None) -> ErrorInfo:
        """The error an exception stands for; a config error names its key."""
        key = getattr(exc, "key", None) if type(exc).__name__ == "ConfigError" else None
        return cls(type=type_name or type(exc).__name__, message=str(exc), key=key)


class CheckOutcome(StrEnum):
    """What one hidden check, or the verification of one answer, found."""

    PASSED = "passed"
    FAILED = "failed"
    UNVERIFIABLE = "unverifiable"
    """The check could not run (the tool raised, or gave no boolean ``ok``): never a pass."""


class CheckResult(_Model):
    """One ``verify`` tool run on one answer."""

    tool: str
    outcome: CheckOutcome
    details: dict[str, Any] | None = Field(default=None, exclude_if=_omitted_when_none)
    """The tool's result, as it returned it."""
    error: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """Why the check is unverifiable."""


class Verification(_Model):
    """The hidden checks of one answer: passed only when every check passed, failed when any failed."""

    outcome: CheckOutcome
    passed: bool | None = None
    """True or False; None when unverifiable."""
    checks: list[CheckResult] = Field(default_factory=list)
    error: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """Why nothing could be checked (e.g. the worker gave no answer)."""


class Verifications(_Model):
    """The hidden verification of the worker's first attempt and of its final answer."""

    first: Verification | None = None
    final: Verification | None = None


class LimitHit(_Model):
    """The limit or budget that stopped a task: its config key, its value and the figure reached."""

    name: str
    """``limits.worker_calls``, ``limits.worker_tokens``, ``limits.total_tokens``, ``limits.wall_seconds``,
    ``run.budget_tokens``, ``run.budget_usd``, ``sweep.budget_tokens`` or ``sweep.budget_usd``."""
    limit: int | float
    value: int | float
    """Calls made, tokens billed, seconds taken, or USD spent (by the run or sweep, for a budget)."""


class BudgetInfo(_Model):
    """A budget a run was held to and what its scope (the run, or the whole sweep) had spent when the run ended."""

    scope: str
    """``run`` or ``sweep``."""
    tokens: int | None = None
    usd: float | None = None
    spent_tokens: int = 0
    """Billed tokens, worker and grader; cached replies cost none."""
    spent_usd: float | None = None
    """Estimated at the price table's rates; null when a model has no price."""
    reached: bool = False

    def spent(self) -> str:
        """``12,345/20,000 tokens, 0.0123/0.0500 USD``: the spend against each cap."""
        parts = []
        if self.tokens is not None:
            parts.append(f"{self.spent_tokens:,}/{self.tokens:,} tokens")
        if self.usd is not None:
            spent = "n/a" if self.spent_usd is None else f"{self.spent_usd:.4f}"  # n/a: a price table that changed
            parts.append(f"{spent}/{self.usd:.4f} USD")
        return ", ".join(parts)


class ModelInfo(_Model):
    """What ran as the worker (and, with more fields, as the grader)."""

    model: str | None = None
    scripted: bool | None = None
    tools: list[str] = Field(default_factory=list)


class GraderInfo(ModelInfo):
    """What ran as the grader, with its settings."""

    max_iterations: int | None = None
    max_model_calls: int | None = None
    structured_output: str | None = None
    strategy: str | None = None
    """How the verdict came back: the strategy ``structured_output`` chose (``auto`` picks one)."""
    probe: dict[str, str] | None = Field(default=None, exclude_if=_omitted_when_none)
    """What ``auto``'s probe of an OpenAI-compatible server found, by strategy tried."""


class RubricInfo(_Model):
    """What was asked and against which criteria."""

    name: str | None = None
    text: str | None = None
    task: str | None = None
    carried_over: bool | None = Field(default=None, exclude_if=_omitted_when_none)
    """On a follow-up turn: whether the rubric carried over from the turn before (not sent again)."""


class TaskRow(_Model):
    """One task of a multi-task run, in its run's record."""

    task_id: str | None = None
    repeat: int | None = None
    status: Status
    iterations: int = 0
    run_dir: str | None = None
    reused: bool = False
    verified_first: bool | None = Field(default=None, exclude_if=_omitted_when_none)
    """The first attempt's hidden verification: true, false, or absent (unverifiable or none)."""
    verified_final: bool | None = Field(default=None, exclude_if=_omitted_when_none)
    """The final answer's hidden verification, as ``verified_first``."""


class Aggregate(_Model):
    """The numbers of a multi-task run."""

    tasks: int
    repeats: int
    runs: int
    satisfied: int
    satisfied_rate: float
    pass_at_k: float
    """Share of tasks satisfied at least once in k repeats."""
    pass_hat_k: float
    """Share of tasks satisfied every time."""
    statuses: dict[str, int]
    reused: int
    rerun: int
    cache_hits: int
    verification: dict[str, dict[str, int]] | None = Field(default=None, exclude_if=_omitted_when_none)
    """With ``verify`` checks: runs by outcome for the ``first`` and the ``final`` answer."""


class RunRecord(_Model):
    """The record of one run or task, written to ``result.json`` however it ends.

    ``iterations`` counts grading passes; ``error`` is set when the run ended by an
    exception, a config error or an interruption. A task of a multi-task run has
    ``task_id`` and ``repeat``; the run's own record then lists its ``tasks`` and an
    ``aggregate``, its status the worst task status and its usage the sum. A regrade
    record names the record it regraded in ``regraded_from``. A follow-up turn on a finished
    run's thread has its own record, with its ``turn`` number (2, 3, ...) and ``continued_from``,
    the record dir of the turn before.
    """

    status: Status = Status.RUNNING
    exit_code: int | None = None
    iterations: int = 0
    evaluations: list[Evaluation] = Field(default_factory=list)
    final_answer: str | None = None
    attempts: list[str] = Field(default_factory=list)
    """The worker's answer at each grading pass, in order (the last one may be ungraded when the loop
    was stopped); each cut to ``ATTEMPT_CHARS`` characters."""
    first_answer: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """The worker's answer before the grader's first revision request (with ``verify`` checks)."""
    verification: Verifications | None = Field(default=None, exclude_if=_omitted_when_none)
    """The hidden ``verify`` checks of the first and the final answer, when the rubric has any."""
    usage: dict[str, Usage] = Field(default_factory=_usage)
    worker: ModelInfo = Field(default_factory=ModelInfo)
    grader: GraderInfo = Field(default_factory=GraderInfo)
    rubric: RubricInfo = Field(default_factory=RubricInfo)
    overrides: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    thread_id: str | None = None
    grading_run_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_seconds: float | None = None
    run_dir: str | None = None
    error: ErrorInfo | None = None
    limit: LimitHit | None = None
    """The limit or budget that ended a ``limit_exceeded``, ``budget_exceeded`` or ``not_run`` record."""
    budgets: list[BudgetInfo] = Field(default_factory=list)
    """The run's budgets (``run.budget_*``, ``sweep.budget_*``) and the spend against them, on a run's record."""
    resumed: int = 0
    """How many times the run was resumed."""
    task_id: str | None = None
    repeat: int | None = None
    tasks: list[TaskRow] = Field(default_factory=list)
    aggregate: Aggregate | None = None
    regraded_from: str | None = None
    turn: int | None = Field(default=None, exclude_if=_omitted_when_none)
    """A follow-up turn's number on its thread (the run itself is turn 1)."""
    continued_from: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """A follow-up turn: the record dir of the turn it continues."""
    schema_version: int = SCHEMA_VERSION

    def fail(self, exc: BaseException, type_name: str | None = None) -> None:
        """End as ``error``, ``exc`` the cause."""
        self.status = Status.ERROR
        self.error = ErrorInfo.of(exc, type_name)

    def interrupt(self, reason: str) -> None:
        """End as ``interrupted`` (Ctrl-C, SIGTERM), ``reason`` saying how."""
        self.status = Status.INTERRUPTED
        self.error = ErrorInfo(type="KeyboardInterrupt", message=reason)

    def stop(self, status: Status, hit: LimitHit) -> None:
        """End as ``limit_exceeded``, ``budget_exceeded`` or ``not_run``, ``hit`` saying which limit and the figure."""
        self.status, self.limit = status, hit
        self.error = ErrorInfo(type="LimitExceeded" if status is Status.LIMIT_EXCEEDED else "BudgetExceeded",
                               message=f"{hit.name} reached: {hit.value:g} of {hit.limit:g}")

    def complete(self, started: float) -> None:
        """How every record ends: exit code, end and wall time (``started``: ``time.monotonic()``),
        and a grader_error's cause as ``error``."""
        config_error = self.error is not None and self.error.type == "ConfigError"
        self.exit_code = int(ExitCode.USAGE if config_error else self.status.exit_code)
        self.ended_at = now()
        self.wall_seconds = round(time.monotonic() - started, 3)
        if self.status is Status.GRADER_ERROR and self.evaluations and self.error is None:
            self.error = ErrorInfo(type="GraderError", message=self.evaluations[-1].explanation)

    def aggregate_tasks(self, results: list[RunRecord], repeats: int, reused: Iterable[str] = ()) -> None:
        """Fill a multi-task run's record from its task records (``reused``: keys ``<id>-r<k>``)."""
        reused = set(reused)
        tally = TaskTally(len(results))
        for index, result in enumerate(results):
            tally.add(index, result, f"{result.task_id}-r{result.repeat}" in reused)
        self.aggregate_tally(tally, repeats)

    def aggregate_tally(self, tally: TaskTally, repeats: int) -> None:
        """Fill a multi-task run's record from the tally of its tasks."""
        rows = [row for row in tally.rows if row is not None]
        self.usage = tally.usage
        self.tasks = rows
        self.status = max((r.status for r in rows), key=lambda status: status.severity, default=Status.ERROR)
        if self.status is Status.NOT_RUN and any(r.status is not Status.NOT_RUN for r in rows):
            self.status = Status.BUDGET_EXCEEDED  # some tasks ran before the budget stopped the run
        self.iterations = sum(r.iterations for r in rows)
        by_task: dict[str, list[bool]] = {}
        for r in rows:
            by_task.setdefault(r.task_id or "task", []).append(r.status is Status.SATISFIED)
        runs = len(rows)
        satisfied = sum(r.status is Status.SATISFIED for r in rows)
        statuses = Counter(r.status for r in rows)
        reused = sum(r.reused for r in rows)
        self.aggregate = Aggregate(
            tasks=len(by_task),
            repeats=repeats,
            runs=runs,
            satisfied=satisfied,
            satisfied_rate=round(satisfied / runs, 4) if runs else 0.0,
            pass_at_k=round(sum(any(v) for v in by_task.values()) / len(by_task), 4) if by_task else 0.0,
            pass_hat_k=round(sum(all(v) for v in by_task.values()) / len(by_task), 4) if by_task else 0.0,
            statuses={status.value: statuses[status] for status in sorted(statuses, key=lambda status: status.severity)},
            reused=reused,
            rerun=runs - reused,
            cache_hits=sum(counts.cached_calls for counts in self.usage.values()),
            verification=tally.verification_counts(),
        )

    def verified(self, which: str) -> bool | None:
        """Whether the ``first`` or ``final`` answer passed its hidden checks; None when unverified or unverifiable."""
        verification = getattr(self.verification, which) if self.verification else None
        return verification.passed if verification else None

    def usage_dict(self) -> dict[str, dict[str, int]]:
        """The usage as plain dicts (for events)."""
        return {role: counts.model_dump() for role, counts in self.usage.items()}


class TaskTally:
    """What a multi-task run's record aggregates of its tasks, taken from each task's record as it
    ends (its row, usage and verification outcomes): a run of many tasks keeps this, not the records."""

    def __init__(self, size: int) -> None:
        self.rows: list[TaskRow | None] = [None] * size
        """Each task's row, in the run's task order."""
        self.usage = _usage()
        self.outcomes: dict[str, Counter[CheckOutcome]] | None = None
        """Verified tasks by outcome of their ``first`` and ``final`` answer; None while none was verified."""

    def add(self, index: int, record: RunRecord, reused: bool = False) -> None:
        """Count the task record of the run's ``index``-th task (``reused``: kept from the run before)."""
        self.rows[index] = TaskRow(task_id=record.task_id, repeat=record.repeat, status=record.status,
                                   iterations=record.iterations, run_dir=record.run_dir, reused=reused,
                                   verified_first=record.verified("first"), verified_final=record.verified("final"))
        for role, counts in record.usage.items():
            self.usage.setdefault(role, Usage()).merge(counts)
        if record.verification is not None:
            self.outcomes = self.outcomes or {"first": Counter(), "final": Counter()}
            for which, counter in self.outcomes.items():
                verification = getattr(record.verification, which)
                if verification is not None:
                    counter[verification.outcome] += 1

    def verification_counts(self) -> dict[str, dict[str, int]] | None:
        """``{"first": {outcome: runs}, "final": {...}}`` over the verified tasks; None when none was verified."""
        if self.outcomes is None:
            return None
        return {which: {outcome.value: counter[outcome] for outcome in CheckOutcome} for which, counter in self.outcomes.items()}
