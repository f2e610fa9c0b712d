"""The loop's policy run for real (``loop.returns``, ``loop.stop``): RubricMiddleware, subclassed at its
documented hooks (``after_agent``, ``aafter_agent``), whose loop also ends when the stop rule says, and
which answers with the attempt the return rule picks.

After each grading pass the library's own hook runs first; when it would send the worker back and the
stop rule (``analysis.policies.stops_after``) fires at this pass, the revision request is dropped and the
loop ends as at its cap (``max_iterations_reached``; the pass keeps the grader's verdict). When the loop
ends, the chosen attempt (``analysis.policies.returned``) is restored as the final message, a copy marked
``RETURNED`` that no attempt list counts; which attempt, and why, is kept in the thread's state
(``_loop_returned``), sent as a ``loop_returned`` stream event, and read into the task's record.
"""

from functools import cache
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage

from ..analysis.policies import NOT_GRADED, patience, returned, stops_after
from ..compat.deepagents import LoopState, ended_at_cap
from ..config.schema import LoopConfig, LoopReturn
from .answers import RETURNED, attempt_messages

STATE_KEY = "_loop_returned"
"""The thread's state key that holds which attempt the loop answered with, and why."""


def is_default(loop: LoopConfig) -> bool:
    """Whether ``loop`` is the library's own policy: the last attempt, no stop rule but the cap."""
    return loop.returns is LoopReturn.last and loop.stop == "none"


def _criteria(evaluation: dict[str, Any]) -> tuple[tuple[str, bool], ...]:
    return tuple((str(c.get("name", "")).strip(), bool(c.get("passed"))) for c in evaluation.get("criteria") or [])


def _why_stopped(stop: str, at: int) -> str:
    if stop == "regression":
        return f"loop.stop=regression ended the loop after pass {at}: it failed a criterion an earlier pass passed"
    k = patience(stop)
    passes = "a pass" if k == 1 else f"{k} passes in a row"
    return f"loop.stop={stop} ended the loop after pass {at}: {passes} without a criterion gained"


def settle(returns: str, stop: str, state: dict[str, Any], update: dict[str, Any] | None) -> dict[str, Any] | None:
    """The library's ``update`` after a grading pass, with the policy applied: the loop stopped when the
    stop rule fires at this pass, and at the loop's end the chosen attempt restored and noted."""
    loop = LoopState.after(state, update)
    if loop is None or update is None:
        return update
    evaluations = loop.evaluations
    passes = [_criteria(e) for e in evaluations]
    stopped = None
    if update.get("jump_to") == "model":
        if stop == "none" or stops_after(stop, passes) != len(passes):
            return update
        update = ended_at_cap(update)
        stopped = _why_stopped(stop, len(passes))
    attempts = attempt_messages(state.get("messages", []))
    scored = [sum(ok for _, ok in c) if c else (NOT_GRADED if e.get("result") == "grader_error" else 0)
              for c, e in zip(passes, evaluations)]
    marked = [None if e.get("result") == "grader_error" else e.get("result") == "satisfied" for e in evaluations]
    chosen = returned(returns, scored, marked) if scored else len(attempts)
    why = [stopped] if stopped else []
    if chosen != len(scored) and 0 < chosen <= len(attempts):
        best = attempts[chosen - 1]
        update["messages"] = [AIMessage(content=best.content, name=RETURNED, additional_kwargs={"lc_source": RETURNED})]
        why.append(f"loop.returns={returns}: attempt {chosen} of {len(scored)} returned, "
                   f"{max(scored[chosen - 1], 0)} criteria passed against the last's {max(scored[-1], 0)}")
    else:
        chosen = len(scored)
        why.append(f"loop.returns={returns}: the last attempt ({chosen} of {chosen}) returned")
    update[STATE_KEY] = {"grading_run_id": loop.grading_run_id, "attempt": chosen, "of": len(scored), "returns": returns,
                         "stopped": stopped is not None, "why": "; ".join(why)}
    return update


@cache
def policy_middleware_class() -> type:
    """``RubricMiddleware`` with the loop's policy (``returns``, ``stop`` keywords): its hooks' updates
    go through ``settle``; its state has ``_loop_returned``."""
    from deepagents.middleware.rubric import RubricMiddleware, RubricState
    from langchain.agents.middleware.types import PrivateStateAttr, hook_config

    class PolicyState(RubricState):
        _loop_returned: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]

    class PolicyRubricMiddleware(RubricMiddleware):
        state_schema = PolicyState

        def __init__(self, *, returns: str, stop: str, **arguments: Any) -> None:
            super().__init__(**arguments)
            self.returns, self.stop = returns, stop

        def _settled(self, state: Any, runtime: Any, update: dict[str, Any] | None) -> dict[str, Any] | None:
            update = settle(self.returns, self.stop, state, update)
            if update and STATE_KEY in update:
                writer = getattr(runtime, "stream_writer", None)
                if writer is not None:
                    writer({"type": "loop_returned", **update[STATE_KEY]})
            return update

        @hook_config(can_jump_to=["model"])
        def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return self._settled(state, runtime, super().after_agent(state, runtime))

        @hook_config(can_jump_to=["model"])
        async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return self._settled(state, runtime, await super().aafter_agent(state, runtime))

    return PolicyRubricMiddleware
