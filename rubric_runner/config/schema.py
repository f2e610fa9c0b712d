"""The typed config schema (registered with Hydra's ConfigStore): every key, its type, default and meaning."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Dict, List, Optional

from omegaconf import MISSING


class StructuredOutput(StrEnum):
    """How the grader's verdict comes back."""

    auto = "auto"
    """Probes an OpenAI-compatible server once per run; else LangChain picks from the model's profile."""
    tool = "tool"
    """A forced ``GraderResponse`` tool call."""
    provider = "provider"
    """The provider's native JSON-schema output."""
    named = "named"
    """``GraderResponse`` forced by name once the grader stops calling evidence tools."""
    json = "json"
    """The schema in the prompt, ``json_object`` output, sent back to fix."""


class OnCutView(StrEnum):
    """What a verdict whose failing criteria rest on a cut view of the transcript does to its task."""

    warn = "warn"
    """A warning on the console and in events; the verdict stands."""
    fail = "fail"
    """The warning, and a task whose last verdict is such a rejection ends ``unsupported``."""
    ignore = "ignore"
    """Only the record's ``cut_view`` flag."""


class Checkpointer(StrEnum):
    """Where the agent's checkpoints go."""

    sqlite = "sqlite"
    memory = "memory"
    postgres = "postgres"


class KeepCheckpoints(StrEnum):
    """Which checkpoints of a task's thread stay once the task has ended with a verdict."""

    latest = "latest"
    """Only the latest, holding the thread's whole state: enough to continue it."""
    all = "all"
    """Every step's, for going back to an earlier step."""


class Isolation(StrEnum):
    """How generated code is isolated (``rubric_runner.sandbox``; ``rubric-runner doctor`` says what works here)."""

    auto = "auto"
    """bubblewrap when it works, else Linux namespaces when root, else refuse to run the code."""
    bwrap = "bwrap"
    """bubblewrap only (refuse when it cannot run)."""
    namespaces = "namespaces"
    """Linux namespaces, root only (refuse otherwise)."""
    none = "none"
    """No isolation: the code runs with this user's access (a warning on the console and in events)."""


class WorkerBackend(StrEnum):
    """Where the worker's files live (``worker.backend``)."""

    state = "state"
    """In the agent's state, and so in its checkpoints: deepagents' ``StateBackend``."""
    sandbox = "sandbox"
    """The task's workspace dir, with ``execute``: each command runs in the sandbox on a copy of it."""
    filesystem = "filesystem"
    """The task's workspace dir (``FilesystemBackend`` in virtual mode), without ``execute``."""


@dataclass
class ModelConfig:
    """One chat model: the worker or the grader."""

    # "provider:model-id" as langchain's init_chat_model takes it, or "scripted:<name>"
    model: str = MISSING
    # sampling temperature; null leaves the provider default
    temperature: Optional[float] = None
    # cap on output tokens per call; null leaves the provider default
    max_tokens: Optional[int] = None
    # seconds before one request times out
    timeout: Optional[float] = None
    # client-side retries of failed requests
    max_retries: Optional[int] = None
    # endpoint override, e.g. a local OpenAI-compatible server
    base_url: Optional[str] = None
    # scripted provider only: YAML file of replies (sections worker: and grader:)
    script: Optional[str] = None
    # any other keyword arguments for the provider's chat model class
    kwargs: Dict[str, Any] = field(default_factory=dict)
    # tools this model may call, by registered name or import path (module.tool) -> settings (null or a mapping)
    tools: Dict[str, Any] = field(default_factory=dict)
    # langchain middleware after the runner's own: a list of {_target_: dotted.path, ...arguments},
    # each built with Hydra's instantiate, e.g. {_target_: langchain.agents.middleware.ModelRetryMiddleware}
    middleware: List[Any] = field(default_factory=list)


@dataclass
class SubagentConfig:
    """A subagent the worker hands work to with its ``task`` tool (``worker.subagents``)."""

    # the name the worker's task tool calls it by
    name: str = MISSING
    # what it does: the worker reads this to choose it
    description: str = MISSING
    # its instructions
    system_prompt: str = ""
    # tools it may call, by registered name or import path as in worker.tools (without settings);
    # empty: the worker's tools
    tools: List[str] = field(default_factory=list)
    # a model group (conf/model: haiku, gpt, ...) or provider:model-id; null: the worker's model. A scripted
    # subagent replays the section of worker.script named after it
    model: Optional[str] = None


@dataclass
class WorkerConfig(ModelConfig):
    """The deep agent that does the work."""

    # the worker's system prompt (from the prompt/worker group)
    system_prompt: str = ""
    # where the worker's files live: state (in the agent's state and checkpoints), filesystem (the
    # task's workspace dir, <task's record dir>/workspace, as its /) or sandbox (that dir, and an execute
    # tool whose commands run in the sandbox, under sandbox.isolation, on a copy of it)
    backend: WorkerBackend = WorkerBackend.state
    # subagents the worker may hand work to with its task tool: a list of {name, description,
    # system_prompt, tools, model}
    subagents: List[SubagentConfig] = field(default_factory=list)
    # dirs of skills (each skill a subdir with a SKILL.md), shown to the worker read-only
    skills: List[str] = field(default_factory=list)
    # memory files loaded into the worker's system prompt, such as AGENTS.md, shown to it read-only
    memory: List[str] = field(default_factory=list)


@dataclass
class GraderConfig(ModelConfig):
    """The LLM-as-a-judge that grades the worker's transcript."""

    # grading passes per rubric attempt; a positive integer
    max_iterations: int = 3
    # cap on the grader's model calls in one grading pass (evidence tool calls, retries of a malformed
    # verdict and the library's coverage retry included); going over ends the pass as grader_error, or,
    # in the coverage retry, with the first verdict (which the library marks unverified if satisfied)
    max_model_calls: int = 10
    # grading instructions; null uses the library's built-in grader prompt
    system_prompt: Optional[str] = None
    # how the verdict comes back: auto (probes an OpenAI-compatible server once per run; else LangChain's
    # pick from the model profile), tool (a forced GraderResponse tool call), provider (native JSON-schema
    # output), named (GraderResponse forced by name once the grader stops calling evidence tools) or json
    # (the schema in the prompt, json_object output, sent back to fix)
    structured_output: StructuredOutput = StructuredOutput.auto
    # a verdict that covers fewer or other criteria than the rubric's lines counts as not satisfied
    # (status unsupported); false: it is only flagged
    strict_coverage: bool = False
    # a verdict whose failing criteria rest on a cut view (messages dropped or cut, tool results moved to
    # files): warn (console and events), fail (as warn, and a task whose last verdict is one ends
    # unsupported) or ignore (only the record's cut_view flag)
    on_cut_view: OnCutView = OnCutView.warn
    # a regrade re-splits the rubric into criteria of its own instead of grading the checklist the run
    # froze (a regrade with another rubric text always re-splits)
    regrade_resplit: bool = False
    # dotted paths of callables called after every grading pass as fn(event=...), as the on_evaluation hook is
    on_evaluation: List[str] = field(default_factory=list)
    # dotted path of fn(messages) -> messages: the part of the worker's transcript the grader reads
    prepare_messages_for_grader: Optional[str] = None
    # dotted path of fn(state, iteration) -> mapping: extra fields of the grader's input state
    # (needs state_schema; it cannot set messages)
    build_grader_state: Optional[str] = None
    # dotted path of the grader agent's state schema, a TypedDict extending langchain's AgentState
    state_schema: Optional[str] = None
    # removed: no runtime context reaches the agents, so a schema for it did nothing; setting it is an error
    context_schema: Optional[str] = None


@dataclass
class RubricConfig:
    """What to ask and what "done" means."""

    # short name, used in records and reports
    name: str = MISSING
    # the task message sent to the worker (unused when a dataset gives the tasks)
    task: str = ""
    # newline-separated criteria the grader checks (a dataset task may bring its own)
    text: str = MISSING
    # the tasks: a JSONL, YAML or CSV file of {id, task, rubric?, target?, metadata?, tools?: {tool: settings},
    # verify?: {tool: settings}}, a Parquet or Arrow file, a Hugging Face dataset dir (save_to_disk; DIR:SPLIT),
    # hf:OWNER/NAME[:SPLIT] from the local hub cache, or a built-in set by name (humaneval); null = the one task above
    dataset: Optional[str] = None
    # the dataset's columns for a task's fields, where they are named otherwise: field -> column, e.g.
    # {task: input, id: sample_id}; fields: id, task, rubric, target, metadata, tools, verify, workspace, protected
    fields: Dict[str, str] = field(default_factory=dict)
    # the dataset's tasks to run: task ids and start:stop slices of its order, e.g. [0:10]; empty = all
    tasks: List[str] = field(default_factory=list)
    # hidden checks of the worker's first and final answers: tool name -> settings, as in grader.tools;
    # never shown to the worker or the grader (a dataset task's own verify settings merge over these)
    verify: Dict[str, Any] = field(default_factory=dict)
    # run the verify checks on every attempt the grader judged (each revision), recorded per attempt;
    # false: on the first attempt and the final answer only, where checks are costly
    verify_every_attempt: bool = True
    # grader tools a pass must call before its verdict may be satisfied; a rubric line (or a passed
    # criterion) that names a grader tool requires that tool too
    evidence: List[str] = field(default_factory=list)
    # the files the worker starts from: a dir (relative to the working dir; a preset's from
    # ${package_data:...}) or inline files, path -> text; seeded into the worker's state on the task's
    # first turn (a dataset row's own workspace, relative to the dataset file, wins)
    workspace: Any = None
    # globs of workspace files the worker must not change (tests, checks): a change is recorded as tampered,
    # and run_tests and the hidden checks run with them restored from the seed
    protected: List[str] = field(default_factory=list)
    # the most bytes a workspace may hold
    workspace_max_bytes: int = 50_000_000
    # the most bytes of each attempt's workspace diff a record keeps (the changed files are kept whole)
    workspace_diff_max_bytes: int = 200_000


class LoopArm(StrEnum):
    """What the worker does after a verdict that is not ``satisfied`` (the ``loop`` config group)."""

    rubric = "rubric"
    """Revises with the grader's feedback: RubricMiddleware's loop."""
    resample = "resample"
    """Answers afresh, never sent the grader's feedback: each attempt a new conversation, judged alike."""
    single = "single"
    """Answers once, graded once: one grading pass whatever ``grader.max_iterations`` says."""


STOP = re.compile(r"^(?:none|regression|no_gain(?::(?P<k>[1-9]\d*))?)$")
"""A stop rule, ``loop.stop``: none, regression, no_gain (one pass without gain) or no_gain:K."""


class LoopReturn(StrEnum):
    """The attempt the loop answers with (``loop.returns``)."""

    last = "last"
    """The last attempt, as RubricMiddleware returns it."""
    best = "best"
    """The attempt with the most criteria passed, ties to the later."""
    satisfied = "satisfied"
    """The last attempt the grader marked satisfied, else the best."""


@dataclass
class LoopConfig:
    """The loop and its controls at equal budget: ``-m loop=rubric,resample,single`` compares them."""

    # rubric (revise with the grader's feedback), resample (fresh answers without it, up to
    # grader.max_iterations attempts, stopping at the first satisfied) or single (one answer, one pass)
    arm: LoopArm = LoopArm.rubric
    # the attempt the loop answers with: last (the library's), best (most criteria passed, ties to the
    # later) or satisfied (the last the grader marked satisfied, else the best)
    returns: LoopReturn = LoopReturn.last
    # what ends the loop before grader.max_iterations: none, no_gain (a pass that passed no more criteria
    # than the best before it), no_gain:K (K such passes in a row) or regression (a pass that fails a
    # criterion an earlier pass passed)
    stop: str = "none"


@dataclass
class RunConfig:
    """How one run executes."""

    # conversation thread id; null makes a fresh one per run (or reuses the run dir's on resume)
    thread_id: Optional[str] = None
    # continue the run recorded in this run dir from its checkpoint instead of starting over
    resume: bool = False
    # where the agent's checkpoints go: "sqlite" (checkpoints.sqlite in the run dir), "memory", or
    # "postgres" (the database at checkpoint_url or $RUBRIC_RUNNER_POSTGRES_URL)
    checkpointer: Checkpointer = Checkpointer.sqlite
    # PostgreSQL connection URL for checkpointer=postgres, without a password (that comes from
    # PGPASSWORD or ~/.pgpass); null: $RUBRIC_RUNNER_POSTGRES_URL
    checkpoint_url: Optional[str] = None
    # checkpoints kept of a task's thread once it ends with a verdict: "latest" (its final state, enough
    # to continue it; in memory none is kept, as no one reads the thread again) or "all" (every step's);
    # an unfinished task keeps all, to resume from
    keep_checkpoints: KeepCheckpoints = KeepCheckpoints.latest
    # characters kept of each tool input and output in events.jsonl
    preview_chars: int = 400
    # characters of a tool's answer its model reads; a longer answer is cut, with a note saying how much
    # (in the answer, in events.jsonl and in the record's tool_outputs_cut)
    tool_output_chars: int = 40000
    # print the live trail on the console (a progress line instead for multi-task runs)
    console: bool = True
    # tasks worked on at once
    concurrency: int = 8
    # times every task is run; records pass@k and pass^k
    repeats: int = 1
    # SQLite file of cached model responses (shared between runs and processes); null = no cache
    cache: Optional[str] = None
    # requests per second per provider, e.g. {anthropic: 2.0}; providers not listed are not limited
    rate_limits: Dict[str, float] = field(default_factory=dict)
    # billed tokens (worker + grader, every task) this run may spend in all; null = no budget
    budget_tokens: Optional[int] = None
    # estimated USD (at the sweep.prices rates) this run may spend in all; null = no budget
    budget_usd: Optional[float] = None


@dataclass
class LimitsConfig:
    """What one task may use; a task that reaches a limit ends as limit_exceeded."""

    # worker model calls per task (its subagents' and cached replies included); null = no limit
    worker_calls: Optional[int] = None
    # billed worker tokens per task (input + output; a cached reply costs none); null = no limit
    worker_tokens: Optional[int] = None
    # billed tokens per task, worker and grader together; null = no limit
    total_tokens: Optional[int] = None
    # wall-clock seconds per task, from its start (a resumed task starts the clock again); null = no limit
    wall_seconds: Optional[float] = None


@dataclass
class SweepConfig:
    """What a multirun sweep does once its jobs are done (see rubric_runner/cli/sweep.py)."""

    # fail the sweep (exit 4) when the fraction of satisfied jobs is below this, 0..1;
    # null: the sweep fails when any job is not satisfied
    fail_under: Optional[float] = None
    # price table for the reports' cost estimates and USD budgets (USD per 1M tokens); null: conf/prices.yaml
    prices: Optional[str] = None
    # billed tokens the whole sweep (all its jobs, in any process or machine) may spend; null = no budget
    budget_tokens: Optional[int] = None
    # estimated USD (at the sweep.prices rates) the whole sweep may spend; null = no budget
    budget_usd: Optional[float] = None


@dataclass
class SandboxConfig:
    """How tools that run generated code (run_test_suite, plugin tools using rubric_runner.sandbox) isolate it."""

    # auto: bubblewrap when it works, else Linux namespaces when root, else refuse to run the code;
    # bwrap or namespaces: only that backend (refuse when it cannot run); none: no isolation (warns)
    isolation: Isolation = Isolation.auto


@dataclass
class Config:
    """The whole composed config."""

    worker: WorkerConfig = field(default_factory=WorkerConfig)
    grader: GraderConfig = field(default_factory=GraderConfig)
    rubric: RubricConfig = field(default_factory=RubricConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    run: RunConfig = field(default_factory=RunConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    # extra notes copied into the result record, e.g. a sweep label
    tags: List[str] = field(default_factory=list)
