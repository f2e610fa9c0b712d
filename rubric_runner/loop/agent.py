"""The agent a plan's tasks share: the worker deep agent, with RubricMiddleware and its grader's stack.

A grading pass reports its evaluation to the task at hand (``context``): its grading notes annotate it,
its recorder keeps it, and the plugins' and config's ``on_evaluation`` listeners see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..compat.deepagents import rubric_middleware
from ..config.schema import LoopArm
from ..context import current_task
from ..grader.evidence import EvidenceRule
from ..grader.middleware import GraderPass
from ..grader.strategies import strategy
from ..models.quirks import ToolCallContent, compatible_server
from ..models.replies import ReplyRetry
from ..observe.recorder import ToolCallWatch
from ..plugins.events import GradingPassed
from ..records import Evaluation
from .arms import FreshAttempts, fresh_for_grader, grading_passes
from .backends import worker_files
from .plan import Plan
from .policy import is_default, policy_middleware_class
from .workspaces import grader_state, grader_state_schema

if TYPE_CHECKING:
    from deepagents import SubAgent


def evaluated(plan: Plan, evaluation: dict[str, Any]) -> None:
    """``RubricMiddleware(on_evaluation=...)``: the pass annotated (with the task's spend so far), recorded,
    and handed to the listeners."""
    task = current_task()
    if task is None:
        return
    task.grading.annotate(evaluation)
    evaluation["spent"] = {role: usage.model_dump() for role, usage in task.recorder.result.usage.items()}
    task.recorder.on_evaluation(evaluation)
    if plan.extensions.listeners["on_evaluation"]:  # the event is built only for someone listening
        plan.extensions.graded(GradingPassed(Evaluation.model_validate(evaluation), task.ref), task.recorder.log)


def watched(prepare: Callable[[list[Any]], list[Any]] | None) -> Callable[[list[Any]], list[Any]]:
    """``prepare_messages_for_grader``: ``prepare``'s messages (or the transcript's), noted by the task's
    grading as those the grader's payload is built from."""
    def messages_for_grader(messages: list[Any]) -> list[Any]:
        shown = prepare(messages) if prepare is not None else messages
        task = current_task()
        if task is not None and task.grading is not None:
            task.grading.looked_at(shown)
        return shown

    return messages_for_grader


def grader_middleware(plan: Plan, max_iterations: int | None = None, loop_policy: bool = False) -> Any:
    """``RubricMiddleware`` with the plan's grader, prompt, tools, stack and listeners; the loop goes on
    while the worker revises, up to ``max_iterations`` grading passes (``grader.max_iterations``, one for
    ``loop.arm=single``); a ``resample`` grader reads the latest attempt alone; what the grader is shown
    is noted for each pass's view; a workspace task's grader reads the worker's files in its state (on every
    backend). With ``loop_policy``, the config's ``loop.returns`` and ``loop.stop`` (``policy``) where they
    are not the library's own."""
    node = plan.config.grader
    arguments = dict(plan.extensions.grader_arguments)
    if plan.config.loop.arm is LoopArm.resample:  # each attempt judged on its own
        arguments["prepare_messages_for_grader"] = fresh_for_grader(arguments.get("prepare_messages_for_grader"))
    arguments["prepare_messages_for_grader"] = watched(arguments.get("prepare_messages_for_grader"))
    grading = GraderPass(strategy(plan.strategy or ""), node.max_model_calls,
                         EvidenceRule(sorted(node.tools), list(plan.config.rubric.evidence)), compatible_server(node))
    if any(task.workspace is not None for task in plan.tasks):  # the grader reads the worker's files
        arguments["build_grader_state"] = grader_state(arguments.get("build_grader_state"))
        arguments["grader_state_schema"] = grader_state_schema(arguments.get("grader_state_schema"))
    loop = plan.config.loop
    if loop_policy and not is_default(loop):
        arguments.update(kind=policy_middleware_class(), returns=loop.returns.value, stop=loop.stop)
    return rubric_middleware(
        model=plan.models["grader"],
        system_prompt=node.system_prompt,
        tools=plan.grader_tools,
        grader_middleware=[grading, ReplyRetry(node), ToolCallWatch("grader", plan.config.run.tool_output_chars), *plan.extensions.grader_middleware],
        max_iterations=max_iterations or grading_passes(plan.config),
        on_evaluation=lambda evaluation: evaluated(plan, evaluation),
        **arguments,
    )


def subagents(plan: Plan) -> list[SubAgent]:
    """``worker.subagents`` as ``create_deep_agent`` takes them: each with its model, its own tools (else the
    worker's), and its tool calls reported to the task's recorder as ``subagent:NAME``'s."""
    own_tools = plan.subagent_tools or {}
    specs: list[SubAgent] = []
    for spec in plan.config.worker.subagents:
        specs.append({"name": spec.name, "description": spec.description, "system_prompt": spec.system_prompt,
                      "model": plan.models[f"subagent:{spec.name}"],
                      "middleware": [ToolCallWatch(f"subagent:{spec.name}", plan.config.run.tool_output_chars)]})
        if spec.name in own_tools:
            specs[-1]["tools"] = own_tools[spec.name]
    return specs


def build_agent(plan: Plan, checkpointer: Any) -> Any:
    """``create_deep_agent(worker, middleware=[RubricMiddleware(grader, ...), *the worker's])``, a cut stream
    retried (``ReplyRetry``); a ``resample`` worker is sent a fresh conversation on each attempt
    (``arms.FreshAttempts``); the worker's files live in ``worker.backend`` (``backends``), beside its
    skills and memory, and it may hand work to ``worker.subagents``."""
    from deepagents import create_deep_agent

    own = [*([ToolCallContent()] if compatible_server(plan.config.worker) else []), ReplyRetry(plan.config.worker),
           ToolCallWatch("worker", plan.config.run.tool_output_chars), *([FreshAttempts()] if plan.config.loop.arm is LoopArm.resample else [])]
    backend, skills, memory = worker_files(plan.config.worker)
    return create_deep_agent(
        model=plan.models["worker"],
        tools=plan.worker_tools,
        system_prompt=plan.config.worker.system_prompt or None,
        middleware=[grader_middleware(plan, loop_policy=True), *own, *plan.extensions.worker_middleware],
        subagents=subagents(plan) or None,
        skills=skills,
        memory=memory,
        backend=backend,
        checkpointer=checkpointer,
    )
