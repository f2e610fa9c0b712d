"""The grading pass as one middleware of the grader sub-agent: prepare, cap, call, settle, check evidence.

Each model step of a pass goes through ``GraderPass`` once. The strategy chosen for the run prepares the
request; every model call of the pass counts against ``grader.max_model_calls`` (re-asks and repairs
included, and the calls of the library's coverage retry, which invokes the grader's agent again), and
the one past the cap raises; the strategy
reads each reply, asking again where it must; a verdict is checked for its evidence and sent back once
when it rests on tools the pass never called, and noted as unsupported when it comes back the same.
What the pass sees is noted on the task's grading (``grader.notes``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.messages import AIMessage, ToolMessage

from ..context import current_task
from ..models.quirks import filled_content
from .evidence import EvidenceRule, sent_back, was_sent_back
from .notes import UNOBSERVED, TaskGrading
from .strategies import Strategy

Steps = Generator[ModelRequest, ModelResponse, ModelResponse]


def _rejected(response: ModelResponse) -> list[dict[str, Any]]:
    """Structured-output calls the model node answered with an error (a verdict that breaks its schema)."""
    if response.structured_response is not None:
        return []
    args = {call["id"]: call.get("args")
            for message in response.result if isinstance(message, AIMessage) for call in message.tool_calls}
    return [{"tool": message.name, "args": args.get(message.tool_call_id), "told": message.content}
            for message in response.result if isinstance(message, ToolMessage)]


class GraderPass(AgentMiddleware):
    """A grading pass's model steps, as the run's ``strategy``, cap and evidence rule make them."""

    replaces = ("ModelCallLimitMiddleware",)
    """The middleware whose work this one does (the cap): another one in ``grader.middleware`` is refused."""

    def __init__(self, strategy: Strategy, max_calls: int, evidence: EvidenceRule, fill_content: bool) -> None:
        super().__init__()
        self.strategy = strategy
        self.max_calls = max_calls
        self.evidence = evidence
        self.fill_content = fill_content

    def _steps(self, request: ModelRequest, grading: TaskGrading, refused: list[dict[str, Any]]) -> Steps:
        """One model step: yields each request to send, is sent each reply, returns the step's response."""
        base, kept = request, []
        if request.messages:
            grading.asked(request.messages[0].text)
        asking = self.strategy.prepare(base)
        while True:
            # the pass's calls, as the task's grading counts them (outside a task: this invocation's replies)
            calls = max(grading.notes.calls, sum(isinstance(message, AIMessage) for message in asking.messages))
            if calls >= self.max_calls:
                raise ModelCallLimitExceededError(thread_count=calls, run_count=calls, thread_limit=None, run_limit=self.max_calls)
            grading.called()
            response = yield filled_content(asking) if self.fill_content else asking
            refused += _rejected(response)
            step = self.strategy.read(asking, response, grading.said)
            kept += step.kept
            if step.again is not None:
                asking = step.again
                continue
            missing = [] if step.verdict is None else self.evidence.missing(step.verdict, grading.rubric_text, [*base.messages, *kept])
            if missing and not was_sent_back(base.messages):
                grading.sent_back(missing)
                kept = sent_back(kept, missing)
                base = base.override(messages=[*base.messages, *kept])
                asking = self.strategy.prepare(base)
                continue
            if missing:
                grading.unsupported(missing)
            return ModelResponse(result=kept, structured_response=step.verdict)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        grading = _grading()
        refused: list[dict[str, Any]] = []
        steps = self._steps(request, grading, refused)
        try:
            asking = next(steps)
            while True:
                asking = steps.send(handler(asking))
        except StopIteration as done:
            return done.value
        except Exception as exc:
            grading.failed(exc)
            raise
        finally:
            _report(refused)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        grading = _grading()
        refused: list[dict[str, Any]] = []
        steps = self._steps(request, grading, refused)
        try:
            asking = next(steps)
            while True:
                asking = steps.send(await handler(asking))
        except StopIteration as done:
            return done.value
        except Exception as exc:
            grading.failed(exc)
            raise
        finally:
            _report(refused)


def _report(refused: list[dict[str, Any]]) -> None:
    """Each verdict the model node refused for breaking its schema, to the task's recorder."""
    task = current_task()
    if task is not None and task.recorder is not None:
        for refusal in refused:
            task.recorder.refused("grader", refusal)


def _grading() -> TaskGrading:
    """The grading of the task at hand; outside any task, one that notes nothing."""
    task = current_task()
    return task.grading if task is not None and task.grading is not None else UNOBSERVED
