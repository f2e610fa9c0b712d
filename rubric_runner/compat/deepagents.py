"""What rubric_runner takes from deepagents' ``RubricMiddleware`` beyond its documented API, in one place.

The loop's state lives under private keys (``_rubric_status``, ``_rubric_criteria``, ...) that the runner
reads back from the checkpoint, and from a grading pass's update when a loop policy ends the loop at it
(``LoopState.after``, ``ended_at_cap``); a regrade calls the middleware's ``aafter_agent`` hook directly, for one
grading pass over a saved transcript, with the run's frozen checklist; the grader's calls carry a metadata
key and its revision requests a message name; what the grader is shown of a transcript is the library's
window (``grader_view``), and a large tool result moved to a file leaves the library's notice; a
``FilesystemBackend`` refuses a path out of its root in ``_resolve_path`` (``confined_files``); an agent
whose backend is a ``StateBackend`` has the state's ``files`` (``files_in_state``), which a tool reads and
writes as ``StateBackend`` does (``agent_files``, ``send_files``).
Each assumption is pinned by ``tests/compat/test_deepagents.py``.
"""

from __future__ import annotations

import functools
import hashlib
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from pydantic import BaseModel

GRADER_TOOL = "GraderResponse"
"""The name of the verdict's schema, and of the tool LangChain's tool strategy makes of it."""
GRADER_SOURCE = "rubric_grader"
"""The ``name`` RubricMiddleware gives the revision requests it injects as HumanMessages."""
GRADER_METADATA_KEY = "rubric_grader_configured_model"
"""Metadata key RubricMiddleware puts on every call its grader makes."""
NONCE = re.compile(r"((?:rubric|transcript|criteria)-)[0-9a-f]{16}")
"""RubricMiddleware wraps each grader payload in tags with a fresh random nonce."""
OFFLOADED = re.compile(r"saved in the filesystem at this path: (\S+)")
"""The notice deepagents leaves in place of a tool result it moved to a file."""
SUBAGENT_TOOL = "task"
"""The tool through which a deep agent calls a subagent."""


@functools.cache
def confined_files() -> type:
    """``FilesystemBackend`` (virtual mode) whose refusal of a path out of its root (``_resolve_path``'s
    ``ValueError``, which its ``write`` lets through, ending the task) is a ``PermissionError``, which every
    file operation answers as its error; a subclass's ``refusal(path)`` may refuse more (a reason, or None)."""
    from deepagents.backends import FilesystemBackend

    class ConfinedFiles(FilesystemBackend):
        place = "its root"

        def refusal(self, path: Any) -> str | None:
            return None

        def _resolve_path(self, key: str) -> Any:
            try:
                path = super()._resolve_path(key)
            except ValueError as exc:
                raise PermissionError(f"refused, {key} is outside {self.place} ({exc})") from None
            reason = self.refusal(path)
            if reason is not None:
                raise PermissionError(f"refused, {reason}")
            return path

    return ConfinedFiles


@functools.cache
def files_in_state() -> type:
    """``confined_files()`` that deep agents take for a ``StateBackend`` too (their ``FilesystemMiddleware``
    asks ``isinstance``), so that every agent on it (the worker, each subagent, the general-purpose one) has
    the state's ``files``, as on ``StateBackend``; its file operations stay the ``FilesystemBackend``'s."""
    from deepagents.backends import StateBackend

    confined: Any = confined_files()

    class FilesInState(confined, StateBackend):
        pass

    return FilesInState


def agent_files() -> dict[str, Any]:
    """The ``files`` of the agent whose tool (or node) runs here, as that tool sees them now (its own writes
    of this step included), read as ``StateBackend`` reads them (``_read_files``)."""
    from deepagents.backends import StateBackend

    return StateBackend()._read_files()


def send_files(update: dict[str, Any]) -> None:
    """``update`` (path -> FileData, None: deleted) written to that agent's ``files`` in this step's writes, with
    the tool's answer, as ``StateBackend`` writes them (``_send_files_update``)."""
    from deepagents.backends import StateBackend

    StateBackend()._send_files_update(update)


def grader_response() -> type[BaseModel]:
    """The verdict's schema, ``GraderResponse``."""
    from deepagents.middleware.rubric import GraderResponse

    return GraderResponse


def rubric_middleware(kind: type | None = None, **arguments: Any) -> Any:
    """``RubricMiddleware(**arguments)`` (or its subclass ``kind``), without its beta warning."""
    from langchain_core._api import LangChainBetaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)
        from deepagents import RubricMiddleware

        return (kind or RubricMiddleware)(**arguments)


@dataclass(frozen=True)
class LoopState:
    """What RubricMiddleware's state says of the loop on a thread."""

    status: str | None
    """The last verdict (``satisfied``, ``needs_revision``, ...), or None before any."""
    iterations: int
    evaluations: list[dict[str, Any]]
    """The evaluations of the current grading run."""
    grading_run_id: str | None
    checklist: list[str] | None = None
    """The criterion names frozen from the run's first pass that reported some; None before."""

    @classmethod
    def of(cls, values: dict[str, Any]) -> LoopState:
        """The loop's state in a thread's state ``values``."""
        run_id = values.get("_current_grading_run_id")
        evaluations = [e for e in values.get("_rubric_evaluations") or [] if e.get("grading_run_id") == run_id]
        return cls(values.get("_rubric_status"), int(values.get("_rubric_iterations") or 0), evaluations, run_id,
                   list(values.get("_rubric_criteria") or []) or None)

    @classmethod
    def after(cls, state: dict[str, Any], update: dict[str, Any] | None) -> LoopState | None:
        """The loop's state once ``update``, what RubricMiddleware's ``after_agent`` hook returned on a thread
        in ``state``, is applied; None when the hook recorded no grading pass."""
        if not update or "_rubric_evaluations" not in update:
            return None
        return cls.of({**state, **update})


def ended_at_cap(update: dict[str, Any]) -> dict[str, Any]:
    """``update``, a grading pass's that sends the worker back, ending the loop instead as its cap does: no
    revision request, no jump back to the model, the loop's status ``max_iterations_reached`` (the pass
    keeps its verdict)."""
    kept = {key: value for key, value in update.items() if key not in ("jump_to", "messages")}
    return {**kept, "_rubric_status": "max_iterations_reached"}


async def grade_once(middleware: Any, messages: list[Any], rubric: str, writer: Any, config: RunnableConfig,
                     checklist: list[str] | None = None, fields: dict[str, Any] | None = None) -> LoopState:
    """One grading pass of ``messages`` against ``rubric`` by ``middleware``, outside any agent: its
    ``aafter_agent`` hook (a run's, so async tools work) called on a fresh state with the worker's other
    ``fields`` (its ``files``), ``writer`` given its stream events; with ``checklist`` frozen in that state,
    the grader is given those criteria, as a run's later passes are."""
    from langchain_core.runnables import RunnableLambda
    from langgraph.runtime import Runtime

    state = {**(fields or {}), "messages": messages, "rubric": rubric, "_rubric_iterations": 0,
             "_rubric_criteria": list(checklist or [])}

    async def grade(given: dict[str, Any]) -> dict[str, Any] | None:
        return await middleware.aafter_agent(given, Runtime(stream_writer=writer))

    update = await RunnableLambda(grade).ainvoke(state, config=config) or {}
    evaluations = list(update.get("_rubric_evaluations") or [])
    run_id = evaluations[0].get("grading_run_id") if evaluations else None
    frozen = update.get("_rubric_criteria") or state["_rubric_criteria"]
    return LoopState(update.get("_rubric_status"), int(update.get("_rubric_iterations") or 0), evaluations, run_id,
                     list(frozen) or None)


def glob_files(files: dict[str, Any], pattern: str, path: str) -> str:
    """The paths of the state backend's ``files`` under ``path`` that match ``pattern``, as its ``glob`` tool
    lists them (``No files found`` for none, an error line for a pattern it refuses)."""
    from deepagents.backends.utils import InvalidGlobPatternError, _glob_search_files

    try:
        return _glob_search_files(files, pattern, path)
    except InvalidGlobPatternError as exc:
        return f"Error: {exc}"


def grader_view(messages: list[Any], payload: str | None) -> dict[str, Any]:
    """What the grader is shown of ``messages`` (the transcript its payload was built from), as the library's
    ``_build_grader_transcript`` selects and cuts it: the first user message it did not inject, the last
    ``_MAX_TRANSCRIPT_MESSAGES``, each cut to ``_MAX_TRANSCRIPT_CHARS_PER_MESSAGE`` characters of its text;
    with the tool results moved to files, the subagents called, and ``payload``'s length and digest."""
    from deepagents.middleware import rubric
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    last, budget = rubric._MAX_TRANSCRIPT_MESSAGES, rubric._MAX_TRANSCRIPT_CHARS_PER_MESSAGE
    start = max(0, len(messages) - last)
    first = next((index for index, message in enumerate(messages) if isinstance(message, HumanMessage)
                  and message.additional_kwargs.get("lc_source") != GRADER_SOURCE), None)
    shown = ([first] if first is not None and first < start else []) + list(range(start, len(messages)))
    cut = []
    for index in shown:
        chars = len(rubric._coerce_text(messages[index]))
        if chars > budget:
            cut.append({"index": index, "chars": chars, "cut": chars - budget})
    offloaded = [found.group(1) for message in messages if isinstance(message, ToolMessage)
                 for found in [OFFLOADED.search(message.text)] if found]
    subagents = [str(call.get("args", {}).get("subagent_type", "")) for message in messages if isinstance(message, AIMessage)
                 for call in message.tool_calls if call.get("name") == SUBAGENT_TOOL]
    return {
        "messages": len(messages), "shown": len(shown), "dropped": len(messages) - len(shown), "cut": cut,
        "cut_chars": sum(item["cut"] for item in cut), "offloaded": offloaded, "subagents": subagents,
        "payload_chars": None if payload is None else len(payload),
        "payload_sha256": None if payload is None else hashlib.sha256(NONCE.sub(r"\1N", payload).encode()).hexdigest(),
    }
