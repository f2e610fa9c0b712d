"""What rubric_runner takes from deepagents' ``RubricMiddleware`` beyond its documented API, in one place.

The loop's state lives under private keys (``_rubric_status``, ...) that the runner reads back from the
checkpoint; a regrade calls the middleware's ``after_agent`` hook directly, for one grading pass over a
saved transcript; the grader's calls carry a metadata key and its revision requests a message name.
Each assumption is pinned by ``tests/compat/test_deepagents.py``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

GRADER_TOOL = "GraderResponse"
"""The name of the verdict's schema, and of the tool LangChain's tool strategy makes of it."""
GRADER_SOURCE = "rubric_grader"
"""The ``name`` RubricMiddleware gives the revision requests it injects as HumanMessages."""
GRADER_METADATA_KEY = "rubric_grader_configured_model"
"""Metadata key RubricMiddleware puts on every call its grader makes."""
NONCE = re.compile(r"((?:rubric|transcript|criteria)-)[0-9a-f]{16}")
"""RubricMiddleware wraps each grader payload in tags with a fresh random nonce."""


def grader_response() -> type:
    """The verdict's schema, ``GraderResponse``."""
    from deepagents.middleware.rubric import GraderResponse

    return GraderResponse


def rubric_middleware(**arguments: Any) -> Any:
    """``RubricMiddleware(**arguments)``, without its beta warning."""
    from langchain_core._api import LangChainBetaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)
        from deepagents import RubricMiddleware

        return RubricMiddleware(**arguments)


@dataclass(frozen=True)
class LoopState:
    """What RubricMiddleware's state says of the loop on a thread."""

    status: str | None
    """The last verdict (``satisfied``, ``needs_revision``, ...), or None before any."""
    iterations: int
    evaluations: list[dict[str, Any]]
    """The evaluations of the current grading run."""
    grading_run_id: str | None

    @classmethod
    def of(cls, values: dict[str, Any]) -> LoopState:
        """The loop's state in a thread's state ``values``."""
        run_id = values.get("_current_grading_run_id")
        evaluations = [e for e in values.get("_rubric_evaluations") or [] if e.get("grading_run_id") == run_id]
        return cls(values.get("_rubric_status"), int(values.get("_rubric_iterations") or 0), evaluations, run_id)


def grade_once(middleware: Any, messages: list[Any], rubric: str, writer: Any, config: dict[str, Any]) -> LoopState:
    """One grading pass of ``messages`` against ``rubric`` by ``middleware``, outside any agent: its
    ``after_agent`` hook called on a fresh state (``writer`` gets its stream events)."""
    from langchain_core.runnables import RunnableLambda
    from langgraph.runtime import Runtime

    state = {"messages": messages, "rubric": rubric, "_rubric_iterations": 0}
    grade = RunnableLambda(lambda s: middleware.after_agent(s, Runtime(stream_writer=writer)))
    update = grade.invoke(state, config=config) or {}
    evaluations = list(update.get("_rubric_evaluations") or [])
    run_id = evaluations[0].get("grading_run_id") if evaluations else None
    return LoopState(update.get("_rubric_status"), int(update.get("_rubric_iterations") or 0), evaluations, run_id)
