"""The records a run writes, as pydantic models that both write and read them.

A run dir's ``result.json`` is a ``RunRecord``: the run's ``header`` (what ran: the resolved config, where
it came from, and a fingerprint of what changes a task's behaviour) and how the run ended: a row per task
x repeat (``tasks``) and their ``aggregate``, each task's own ``TaskRecord`` in
``tasks/<id>-r<k>/result.json``, however many tasks the run has. A follow-up turn and a regrade are runs
too, of their own ``kind``, laid out alike. Versions 1 and 2 kept a run of one task's record inline in the
run's own file; they read as a run of one task whose task dir is the run dir (``RunRecord.inline_task``).

``schema_version`` changes when a field is renamed, removed, or changes meaning or type; adding an
optional field (with a default, so older records still read) keeps the version. Readers ignore fields
they do not know, so a record written by a newer version still reads; ``records.v1`` reads version 1.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .passk import satisfied_k
from .status import ExitCode, Status, satisfied_rate

SCHEMA_VERSION = 3
USAGE_ERROR = "UsageError"
DID_NOT_RUN = "DidNotRun"
"""The error type of a sweep job's record written for it because it never ran (cancelled, lost, never
started); the job takes that record over should it run after all."""
ATTEMPT_CHARS = 8000
"""The most characters of each graded answer a record keeps in ``attempts``."""


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _omitted_when_none(value: Any) -> bool:
    return value is None


def _omitted_when_empty(value: Any) -> bool:
    return not value


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


Verdict = Literal["satisfied", "needs_revision", "failed", "max_iterations_reached", "grader_error"]
"""What one grading pass ended in (deepagents' ``RubricResult``)."""


class Criterion(_Model):
    """One criterion's verdict in a grading pass."""

    name: str
    passed: bool
    gap: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """What is missing, on a failing criterion."""


class Unsupported(_Model):
    """A verdict that rests on evidence its grading pass never gathered."""

    missing: list[str]
    """The grader tools the verdict rests on that the pass never called (or that no tool could give)."""


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


class CutMessage(_Model):
    """A message the grader was shown cut short."""

    index: int
    """Its place in the transcript, from 0."""
    chars: int
    """Its length, as the grader's payload renders it."""
    cut: int
    """The characters past the library's per-message budget, which the grader never saw."""


class GraderView(_Model):
    """What the grader was shown in one grading pass: RubricMiddleware's window over the transcript (the
    first user message and the last 30 messages, each cut to 4,000 characters)."""

    messages: int
    """Messages in the transcript the payload was built from."""
    shown: int
    """Messages the payload holds."""
    dropped: int
    """Messages left out of the window."""
    cut: list[CutMessage] = Field(default_factory=list)
    cut_chars: int = 0
    """Characters cut, over every cut message."""
    offloaded: list[str] = Field(default_factory=list)
    """Files the transcript's large tool results were moved to (the grader saw only the path and a preview)."""
    subagents: list[str] = Field(default_factory=list)
    """The subagent of each ``task`` call: its inner work reaches the transcript only as its last message."""
    payload_chars: int | None = None
    """The length of the grader's first payload in the pass."""
    payload_sha256: str | None = None
    """Its sha256, with the library's random tag nonce blanked: the same view gives the same digest."""

    @property
    def is_cut(self) -> bool:
        """Whether the grader saw less than the transcript holds: messages dropped or cut, results offloaded."""
        return bool(self.dropped or self.cut_chars or self.offloaded)

    def describe(self) -> str:
        """``31 of 40 messages shown, 31 cut by 124,000 characters, 1 result in a file, 2 subagent calls``."""
        parts = [f"{self.shown} of {self.messages} messages shown"]
        if self.cut:
            parts.append(f"{len(self.cut)} cut by {self.cut_chars:,} characters")
        if self.offloaded:
            parts.append(f"{len(self.offloaded)} tool result{'s' if len(self.offloaded) > 1 else ''} in files")
        if self.subagents:
            parts.append(f"{len(self.subagents)} subagent call{'s' if len(self.subagents) > 1 else ''} seen by their last message only")
        return ", ".join(parts)


class Evaluation(_Model):
    """One grading pass, as ``RubricMiddleware`` reports it, with what the runner noted about it."""

    grading_run_id: str | None = None
    iteration: int = 0
    result: Verdict
    explanation: str = ""
    criteria: list[Criterion] = Field(default_factory=list)
    unverified: bool = False
    """The library's flag: the grader reported fewer criteria than its checklist twice, so its ``satisfied``
    was rewritten to ``needs_revision`` (``max_iterations_reached`` on the last pass): a revision the
    grader, not the worker, caused. False in records that predate it."""
    view: GraderView | None = Field(default=None, exclude_if=_omitted_when_none)
    """What the grader was shown."""
    grader_calls: int | None = Field(default=None, exclude_if=_omitted_when_none)
    """The grader's model calls in the pass, its coverage retry's included."""
    cut_view: bool = Field(default=False, exclude_if=_omitted_when_empty)
    """Set when the verdict's failing criteria rest on a cut view (``grader.on_cut_view``)."""
    unsupported: Unsupported | None = Field(default=None, exclude_if=_omitted_when_none)
    """Set when the verdict came back, after being sent back once, still without its evidence."""
    coverage: Coverage | None = Field(default=None, exclude_if=_omitted_when_none)
    """Set when the criteria are fewer than the rubric's lines or do not match them."""
    grader_said: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """On a grader_error: what the grader answered instead of a verdict (bounded)."""
    spent: dict[str, Usage] | None = Field(default=None, exclude_if=_omitted_when_none)
    """The task's tokens by role when this pass ended (this pass's and every earlier one's)."""


class FlaggedReply(_Model):
    """A model reply that was no plain answer."""

    agent: str
    """``worker`` or ``grader``."""
    kind: str
    """``incomplete`` (a stream that ended before its finish: never graded, never cached), ``refusal`` (the
    model declined) or ``invalid_tool_call`` (a tool call whose arguments do not parse: never run)."""
    detail: str = ""
    """The text so far, what the model said in declining, or the tool and why its arguments do not parse
    (bounded by ``run.preview_chars``)."""


class ErrorInfo(_Model):
    """Why a run or task ended in error or was interrupted."""

    type: str
    message: str
    key: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """The config key or argument, for a ``UsageError``."""

    @classmethod
    def of(cls, exc: BaseException, type_name: str | None = None) -> ErrorInfo:
        """The error an exception stands for; a usage error names its key."""
        key = getattr(exc, "key", None) if type(exc).__name__ == USAGE_ERROR else None
        return cls(type=type_name or type(exc).__name__, message=str(exc), key=key)

    @property
    def is_usage(self) -> bool:
        """Whether the user can fix it in the config or the command (``ConfigError`` in version 1 records)."""
        return self.type in (USAGE_ERROR, "ConfigError")


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
    """Why the check is unverifiable, or which of its rules failed (the protected files, a trajectory rule)."""


class Verification(_Model):
    """The hidden checks of one answer: passed only when every check passed, failed when any failed."""

    outcome: CheckOutcome
    passed: bool | None = None
    """True or False; None when unverifiable."""
    checks: list[CheckResult] = Field(default_factory=list)
    error: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """Why nothing could be checked (e.g. the worker gave no answer)."""

    def failures(self) -> list[str]:
        """Each failed check in one line: its tool and what failed (``trajectory: max_calls.execute: ...``)."""
        return [f"{check.tool}: {check.error or 'failed'}" for check in self.checks if check.outcome is CheckOutcome.FAILED]


class Verifications(_Model):
    """The hidden verification of the worker's first attempt and of its final answer."""

    first: Verification | None = None
    final: Verification | None = None


class AttemptVerification(_Model):
    """One attempt the grader judged: its verdict and criteria, and the hidden checks of the answer it judged."""

    attempt: int
    """The grading pass that judged it, from 1."""
    verdict: str | None = None
    """The pass's result (``satisfied``, ``needs_revision``, ...); None for an answer no pass judged."""
    criteria: dict[str, bool] = Field(default_factory=dict)
    """Each criterion's verdict in that pass, by name."""
    verification: Verification | None = None
    """The answer's hidden checks; None when not checked (``rubric.verify_every_attempt: false`` checks
    the first and the final answer only)."""
    tampered: list[str] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """A workspace task's: the protected files the attempt changed (which fail its checks)."""


class AttemptWorkspace(_Model):
    """The worker's files at one grading pass (or at the end), kept as their changes against the task's seed."""

    attempt: int | None = None
    """The grading pass, from 1; None for the final workspace."""
    diff: str
    """The unified diff against the seed, relative to the task's record dir."""
    diff_bytes: int
    """The diff's size as kept."""
    diff_cut: bool = False
    """Whether the diff was cut to ``diff_cap`` bytes (the changed files are kept whole beside it)."""
    diff_cap: int
    """``rubric.workspace_diff_max_bytes`` when it was kept."""
    changed: list[str] = Field(default_factory=list)
    """The paths added, changed or deleted against the seed."""
    tampered: list[str] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """The protected paths among them."""


class Returned(_Model):
    """The attempt the loop answered with under its policy (``loop.returns``, ``loop.stop``), and why."""

    attempt: int
    """The attempt returned, from 1: its answer is the final one."""
    of: int
    """The attempts graded."""
    returns: str
    """``loop.returns``: last, best or satisfied."""
    stopped: bool = False
    """Whether ``loop.stop`` ended the loop (before ``grader.max_iterations``)."""
    why: str = ""


class LimitHit(_Model):
    """The limit or budget that stopped a task: its config key, its value and the figure reached."""

    name: str
    """``limits.worker_calls``, ``limits.worker_tokens``, ``limits.total_tokens``, ``limits.wall_seconds``,
    ``run.budget_tokens``, ``run.budget_usd``, ``sweep.budget_tokens`` or ``sweep.budget_usd``."""
    limit: int | float
    value: int | float
    """Calls made, tokens billed, seconds taken, or USD spent (by the run or sweep, for a budget)."""


class ToolOutputCut(_Model):
    """A tool's answer cut to ``run.tool_output_chars`` before its model read it."""

    agent: str
    """``worker`` or ``grader``."""
    tool: str
    chars: int
    """The answer's length in characters."""
    kept: int
    """The characters the model read (a note saying how much was left out follows them)."""


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
    """The rubric a run was configured with: its name, criteria and task message."""

    name: str | None = None
    text: str | None = None
    task: str | None = None


class RunKind(StrEnum):
    """What a run did."""

    RUN = "run"
    """The rubric loop on a task or a task set."""
    TURN = "turn"
    """A follow-up turn on a finished run's thread."""
    REGRADE = "regrade"
    """One grading pass over another run's saved transcripts."""


class ConfigSources(_Model):
    """Where a run's config came from: what composing it again takes."""

    overrides: list[str] = Field(default_factory=list)
    """The overrides, as given (a secret's value redacted)."""
    config_dirs: list[str] = Field(default_factory=list)
    """Config dirs searched before the package's own (``--config-dir``), absolute."""


class RunHeader(_Model):
    """What a run was: its kind, its config and where that came from, and what ran as worker and grader."""

    kind: RunKind = RunKind.RUN
    sources: ConfigSources = Field(default_factory=ConfigSources)
    config: dict[str, Any] = Field(default_factory=dict)
    """The resolved config (a secret's value redacted)."""
    fingerprint: str | None = None
    """A digest of what in the config changes what a task does (``config.fingerprint``): runs with the
    same fingerprint ran the same configuration, whatever their plumbing (concurrency, repeats, budgets)."""
    worker: ModelInfo = Field(default_factory=ModelInfo)
    grader: GraderInfo = Field(default_factory=GraderInfo)
    rubric: RubricInfo = Field(default_factory=RubricInfo)
    tags: list[str] = Field(default_factory=list)
    turn: int | None = Field(default=None, exclude_if=_omitted_when_none)
    """A follow-up turn's number on its thread (the run itself is turn 1)."""
    continued_from: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """A follow-up turn: the record dir of the turn it continues."""
    regraded_from: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """A regrade: the record dir whose transcripts it graded again."""
    regraded_with: list[str] | None = Field(default=None, exclude_if=_omitted_when_none)
    """A regrade: the overrides it put on the config of the run it graded (``grader=gpt``)."""


class Place(_Model):
    """Where a run ran: the host and process, and the cluster's ids of its job where it had one."""

    host: str | None = None
    pid: int | None = None
    slurm_job_id: str | None = Field(default=None, exclude_if=_omitted_when_none)
    slurm_array_job_id: str | None = Field(default=None, exclude_if=_omitted_when_none)
    slurm_array_task_id: str | None = Field(default=None, exclude_if=_omitted_when_none)
    ray_node_id: str | None = Field(default=None, exclude_if=_omitted_when_none)


class _Ending(_Model):
    """How a run or a task ended: its status, exit code, error, times."""

    status: Status = Status.RUNNING
    exit_code: int | None = None
    error: ErrorInfo | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_seconds: float | None = None
    resumed: int = 0
    """How many times it was resumed."""
    run_dir: str | None = None
    """Where the record is."""

    def fail(self, exc: BaseException, type_name: str | None = None) -> None:
        """End as ``error``, ``exc`` the cause."""
        self.status = Status.ERROR
        self.error = ErrorInfo.of(exc, type_name)

    def interrupt(self, reason: str) -> None:
        """End as ``interrupted`` (Ctrl-C, SIGTERM), ``reason`` saying how."""
        self.status = Status.INTERRUPTED
        self.error = ErrorInfo(type="KeyboardInterrupt", message=reason)

    def complete(self, started: float) -> None:
        """How every record ends: exit code, end and wall time (``started``: ``time.monotonic()``)."""
        usage_error = self.error is not None and self.error.is_usage
        self.exit_code = int(ExitCode.USAGE if usage_error else self.status.exit_code)
        self.ended_at = now()
        self.wall_seconds = round(time.monotonic() - started, 3)


class TaskRecord(_Ending):
    """What one task (a task x repeat) did: its grading passes, answers, verification and usage.

    Recorded in its run's ``tasks/<id>-r<k>/result.json``. ``iterations`` counts grading passes.
    """

    task_id: str | None = None
    repeat: int | None = None
    task: str | None = None
    """The message the worker was sent."""
    rubric: str | None = None
    """The criteria it was graded against."""
    rubric_carried_over: bool | None = Field(default=None, exclude_if=_omitted_when_none)
    """On a follow-up turn: whether the rubric carried over from the turn before (not sent again)."""
    iterations: int = 0
    evaluations: list[Evaluation] = Field(default_factory=list)
    checklist: list[str] | None = Field(default=None, exclude_if=_omitted_when_none)
    """The criterion names RubricMiddleware froze from the first pass that reported some: every later pass
    (and a regrade, unless it re-splits) grades that list."""
    final_answer: str | None = None
    attempts: list[str] = Field(default_factory=list)
    """The worker's answer at each grading pass, in order (the last one may be ungraded when the loop
    was stopped); each cut to ``ATTEMPT_CHARS`` characters."""
    first_answer: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """The worker's answer before the grader's first revision request (with ``verify`` checks)."""
    verification: Verifications | None = Field(default=None, exclude_if=_omitted_when_none)
    """The hidden ``verify`` checks of the first and the final answer, when the rubric has any."""
    verified_attempts: list[AttemptVerification] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """Every attempt with its verdict and hidden checks, in order, when the rubric has ``verify`` checks."""
    workspace_seed: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """A task with a workspace: the sha256 of its seed, which the run dir keeps in ``seeds/<sha256>.json``
    (a record without it, written before, has its seed in ``seeds/<task id>.json``)."""
    workspaces: list[AttemptWorkspace] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """A task with a workspace: its files as each grading pass read them, in order."""
    final_workspace: AttemptWorkspace | None = Field(default=None, exclude_if=_omitted_when_none)
    """A task with a workspace: its files at the end."""
    returned: Returned | None = Field(default=None, exclude_if=_omitted_when_none)
    """With a ``loop.returns`` or ``loop.stop`` other than the library's: the attempt returned, and why."""
    usage: dict[str, Usage] = Field(default_factory=_usage)
    flagged_replies: list[FlaggedReply] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """Each model reply of the task that was cut short, a refusal, or had tool calls that do not parse, in order."""
    thread_id: str | None = None
    grading_run_id: str | None = None
    limit: LimitHit | None = None
    """The limit or budget that ended a ``limit_exceeded``, ``budget_exceeded`` or ``not_run`` task."""
    tool_outputs_cut: list[ToolOutputCut] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """Each tool answer cut to ``run.tool_output_chars``, in order."""
    regraded_from: str | None = Field(default=None, exclude_if=_omitted_when_none)
    """A regraded transcript: the record dir it came from."""
    schema_version: int = SCHEMA_VERSION

    def stop(self, status: Status, hit: LimitHit) -> None:
        """End as ``limit_exceeded``, ``budget_exceeded`` or ``not_run``, ``hit`` saying which limit and the figure."""
        self.status, self.limit = status, hit
        self.error = ErrorInfo(type="LimitExceeded" if status is Status.LIMIT_EXCEEDED else "BudgetExceeded",
                               message=f"{hit.name} reached: {hit.value:g} of {hit.limit:g}")

    def complete(self, started: float) -> None:
        """As every record ends; a grader_error's cause becomes its ``error``."""
        super().complete(started)
        if self.status is Status.GRADER_ERROR and self.evaluations and self.error is None:
            self.error = ErrorInfo(type="GraderError", message=self.evaluations[-1].explanation)

    def verified(self, which: Literal["first", "final"]) -> bool | None:
        """Whether the ``first`` or ``final`` answer passed its hidden checks; None when unverified or unverifiable."""
        verification = getattr(self.verification, which) if self.verification else None
        return verification.passed if verification else None

    def tokens(self) -> int:
        """Billed tokens, worker and grader."""
        return sum(counts.total_tokens for counts in self.usage.values())


class TaskRow(_Model):
    """One task x repeat, in its run's record."""

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
    """The numbers of a run's tasks."""

    tasks: int
    repeats: int
    runs: int
    finished: int | None = None
    """Runs that ended (see ``Status.unfinished``); None in records that predate it."""
    decided: int | None = None
    """Of them, those that ended satisfied or unsatisfied (``Status.decided``, not a crash): the rates are
    over them; None in records that predate it."""
    satisfied: int
    satisfied_rate: float | None
    """``status.satisfied_rate``: share of the decided runs satisfied; None when none was decided."""
    k: int | None = None
    """The k of ``pass_at_k`` and ``pass_hat_k``: the fewest decided runs of a task."""
    pass_at_k: float | None
    """satisfied@k (``passk.satisfied_k``): the chance that k of a task's decided runs hold a satisfied
    one, the mean over the tasks with a decided run; None when there is none."""
    pass_hat_k: float | None
    """satisfied^k: the chance that k of a task's decided runs are all satisfied, the mean over the tasks."""
    statuses: dict[str, int]
    reused: int
    rerun: int
    """Tasks this run worked on: not reused, and not left unstarted (``not_run``, or interrupted before
    any model call)."""
    cache_hits: int
    verification: dict[str, dict[str, int]] | None = Field(default=None, exclude_if=_omitted_when_none)
    """With ``verify`` checks: runs by outcome for the ``first`` and the ``final`` answer."""
    usage: dict[str, Usage] = Field(default_factory=_usage)
    """Token counts by role, summed over the tasks."""


class RunRecord(_Ending):
    """The record of a run, written to its dir's ``result.json`` however it ends.

    ``status`` is the worst task's (its ``usage`` and ``iterations`` summed in ``aggregate``); ``error`` is
    the run's own when it ended by an exception, a config error or an interruption before or outside its
    tasks, else the first worst task's.
    """

    header: RunHeader = Field(default_factory=RunHeader)
    tasks: list[TaskRow] = Field(default_factory=list)
    """One row per task x repeat, in the run's order."""
    aggregate: Aggregate | None = None
    budgets: list[BudgetInfo] = Field(default_factory=list)
    """The run's budgets (``run.budget_*``, ``sweep.budget_*``) and the spend against them."""
    place: Place | None = None
    taken_over: list[Place] = Field(default_factory=list, exclude_if=_omitted_when_empty)
    """Earlier attempts of this sweep job (a retry, a requeue) whose process died while the record said
    ``running``: where each ran. The run resumed from their checkpoints; attempts = these + 1."""
    schema_version: int = SCHEMA_VERSION
    _inline: TaskRecord | None = PrivateAttr(default=None)

    @property
    def inline_task(self) -> TaskRecord | None:
        """A version 1 or 2 run of one task: its task's record, which that version kept in the run's own file
        (its task dir is the run dir); None for every other record."""
        return self._inline

    def hold_inline(self, task: TaskRecord) -> None:
        """Read a version 1 or 2 run of one task as a run of one task: ``task`` its one row and its aggregate."""
        self._inline = task
        tally = TaskTally(1)
        tally.add(0, task)
        whole = RunRecord()
        tally.fill(whole, 1)
        self.tasks, self.aggregate = whole.tasks, whole.aggregate

    def task_usage(self) -> dict[str, Usage]:
        """Token counts by role, summed over the tasks."""
        return self.aggregate.usage if self.aggregate is not None else _usage()

    def grading_passes(self) -> int:
        """Grading passes, summed over the tasks."""
        return sum(row.iterations for row in self.tasks)


class TaskTally:
    """What a run's record aggregates of its tasks, taken from each task's record as it ends (its row, usage
    and verification outcomes): a run of many tasks keeps this, not the records."""

    def __init__(self, size: int) -> None:
        self.rows: list[TaskRow | None] = [None] * size
        """Each task's row, in the run's task order."""
        self.worked: list[bool] = [False] * size
        """Whether this run worked on each task (see ``Aggregate.rerun``)."""
        self.errors: list[ErrorInfo | None] = [None] * size
        """Each task's error, in the run's task order."""
        self.usage = _usage()
        self.outcomes: dict[str, Counter[CheckOutcome]] | None = None
        """Verified tasks by outcome of their ``first`` and ``final`` answer; None while none was verified."""

    def add(self, index: int, record: TaskRecord, reused: bool = False) -> None:
        """Count the record of the run's ``index``-th task (``reused``: kept from the run before)."""
        self.rows[index] = TaskRow(task_id=record.task_id, repeat=record.repeat, status=record.status,
                                   iterations=record.iterations, run_dir=record.run_dir, reused=reused,
                                   verified_first=record.verified("first"), verified_final=record.verified("final"))
        calls = sum(counts.calls + counts.cached_calls for counts in record.usage.values())
        unstarted = record.status is Status.NOT_RUN or (record.status is Status.INTERRUPTED and not calls)
        self.worked[index] = not reused and not unstarted
        self.errors[index] = record.error
        for role, counts in record.usage.items():
            self.usage.setdefault(role, Usage()).merge(counts)
        if record.verification is not None:
            self.outcomes = self.outcomes or {"first": Counter(), "final": Counter()}
            for which, counter in self.outcomes.items():
                verification = getattr(record.verification, which)
                if verification is not None:
                    counter[verification.outcome] += 1

    def fill(self, record: RunRecord, repeats: int) -> None:
        """Fill a run's record: its rows, aggregate, status (the worst task's) and, unless the run has one of its
        own, error (the first worst task's)."""
        rows = [row for row in self.rows if row is not None]
        record.tasks = rows
        status = max((r.status for r in rows), key=lambda status: status.severity, default=Status.ERROR)
        if status is Status.NOT_RUN and any(r.status is not Status.NOT_RUN for r in rows):
            status = Status.BUDGET_EXCEEDED  # some tasks ran before the budget stopped the run
        record.status = status
        worst = [error for row, error in zip(self.rows, self.errors, strict=True) if row is not None and row.status is status]
        record.error = record.error or next((error for error in worst if error is not None), None)
        statuses = Counter(r.status for r in rows)
        rate, by_task = satisfied_rate(r.status for r in rows), satisfied_k((r.task_id or "task", r.status) for r in rows)
        record.aggregate = Aggregate(
            tasks=len({r.task_id or "task" for r in rows}),
            repeats=repeats,
            runs=len(rows),
            finished=sum(not r.status.unfinished for r in rows),
            decided=sum(r.status.decided for r in rows),
            satisfied=statuses[Status.SATISFIED],
            satisfied_rate=None if rate is None else round(rate, 4),
            k=by_task.k if by_task else None,
            pass_at_k=round(by_task.at_k, 4) if by_task else None,
            pass_hat_k=round(by_task.all_k, 4) if by_task else None,
            statuses={status.value: statuses[status] for status in sorted(statuses, key=lambda status: status.severity)},
            reused=sum(r.reused for r in rows),
            rerun=sum(self.worked),
            cache_hits=sum(counts.cached_calls for counts in self.usage.values()),
            verification=self.verification_counts(),
            usage=self.usage,
        )

    def verification_counts(self) -> dict[str, dict[str, int]] | None:
        """``{"first": {outcome: runs}, "final": {...}}`` over the verified tasks; None when none was verified."""
        if self.outcomes is None:
            return None
        return {which: {outcome.value: counter[outcome] for outcome in CheckOutcome} for which, counter in self.outcomes.items()}
