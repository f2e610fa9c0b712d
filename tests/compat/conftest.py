"""The deep agent loop the compat tests read: one answer and a revision, graded twice."""

from __future__ import annotations

import asyncio

import pytest
from support.helpers import verdict

from rubric_runner.compat import deepagents as compat_deepagents
from rubric_runner.models.scripted import ScriptedChatModel

SEEN: list = []
"""What each call of a ``Seen`` model was given: its messages and its metadata."""


class Seen(ScriptedChatModel):
    """A scripted model that keeps what each call was given in ``SEEN``."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        SEEN.append((list(messages), dict(getattr(run_manager, "metadata", None) or {})))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def _loop(grader_turns: list[dict]) -> tuple[dict, list]:
    """A deep agent with RubricMiddleware: one answer, then a revision, graded by ``grader_turns``."""
    from deepagents import create_deep_agent
    from langgraph.checkpoint.memory import InMemorySaver

    SEEN.clear()
    grader = Seen(model="scripted:g", turns=grader_turns)
    worker = Seen(model="scripted:w", turns=[{"content": "draft"}, {"content": "final"}])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=3)
    agent = create_deep_agent(model=worker, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "Write it."}], "rubric": "- c"}, config))
    return agent.get_state(config).values, list(SEEN)


@pytest.fixture(scope="module")
def loop():
    return _loop([verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])
