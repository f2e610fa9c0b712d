"""A chat model that replays a script of replies: offline runs, tests and demos."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from ..compat.deepagents import GRADER_METADATA_KEY, NONCE
from ..context import current_task

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CURSOR_DIR = "scripted-cursors"
"""Where in a run dir scripted models keep their place in their scripts (one dir per role)."""


class ScriptError(ValueError):
    """The script file is missing, malformed, or has no reply left to give."""


class ScriptedFault(RuntimeError):
    """The failure a ``raise`` turn asks for, standing in for a provider's (not a reply it could not read)."""


def _check_turns(turns: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(turns, list):
        raise ScriptError(f"{where} must be a list of turns")
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict) or not ({"content", "tool_calls", "raise"} & set(turn)):
            raise ScriptError(f"{where}[{index}] must be a mapping with content, tool_calls or raise")
        told = turn.get("when_told", {})
        if not isinstance(told, dict) or not all(isinstance(text, str) for text in told):
            raise ScriptError(f"{where}[{index}].when_told must map texts to turns")
        _check_turns(list(told.values()), f"{where}[{index}].when_told")
        usage = turn.get("usage", {})
        if not isinstance(usage, dict) or not all(
            key in ("input_tokens", "output_tokens") and isinstance(n, int) and not isinstance(n, bool) and n >= 0
            for key, n in usage.items()
        ):
            raise ScriptError(f"{where}[{index}].usage must map input_tokens and output_tokens to counts")
    return turns


def load_script(path: str | Path, section: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """One section (``worker`` or ``grader``) of a YAML script file: the turns every task
    replays, and the turns of tasks that have their own (``tasks: {id: {worker:, grader:}}``)."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except FileNotFoundError:
        raise ScriptError(f"script file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ScriptError(f"script file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get(section, []), list):
        raise ScriptError(f"script file {path} has no list under '{section}:'")
    per_task = data.get("tasks") or {}
    if not isinstance(per_task, dict) or not all(isinstance(v, dict) for v in per_task.values()):
        raise ScriptError(f"{path}: 'tasks' must map task ids to {{worker: [...], grader: [...]}}")
    if section not in data and not any(section in v for v in per_task.values()):
        raise ScriptError(f"script file {path} has no list under '{section}:'")
    turns = _check_turns(data.get(section, []), f"{path}: {section}")
    by_task = {
        str(task_id): _check_turns(sections[section], f"{path}: tasks.{task_id}.{section}")
        for task_id, sections in per_task.items()
        if section in sections
    }
    return turns, by_task


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedChatModel(BaseChatModel):
    """Replays ``turns`` in order, one per model call; labelled ``scripted`` everywhere.

    A turn is a mapping with ``content`` (text), ``tool_calls`` (a list of
    ``{name, args}``), or ``raise`` (a message: the call fails with
    ``ScriptedFault``, standing in for a provider failure). A turn may add
    ``when_told`` (text -> turn): the reply given instead when the message
    answered contains that text (the worker's: the task or a revision request
    naming a gap; the grader's: its payload, with the transcript). Optional
    ``latency`` (seconds) delays the reply; optional ``usage``
    (``input_tokens``, ``output_tokens``) is the token usage it reports, else
    estimated at four characters a token.

    Each conversation thread (``thread_id``) replays the script from its own
    position, so one model serves many concurrent tasks; a task listed in
    ``turns_by_task`` replays its own turns instead. The position follows
    from what the call is given, so a call redone after a crash, or answered
    from the response cache, gets the turn it got the first time: the
    worker's is the number of its replies on the thread (across follow-up
    turns); a grading pass starts where the thread's script stood when that
    pass (its payload) was first graded, and goes on by the grader's replies
    within it. A ``resample`` worker's count adds the replies of earlier
    attempts it was not sent. A ``raise`` turn given counts too, so a retried
    call gets the turn after it. With ``cursor_dir`` the passes' starts and
    the raises are kept on disk, one file per script: a resumed run continues
    the script, a regrade given the run's positions (``carry_on``) goes on
    after them, and another script starts at its top.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "scripted"
    turns: list[dict[str, Any]] = Field(default_factory=list)
    turns_by_task: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    latency: float = 0.0
    cursor_dir: Path | None = None
    _passes: dict[tuple[str, str], int] = PrivateAttr(default_factory=dict)
    """Where each grading pass (thread, payload digest) started in the script."""
    _next: dict[str, int] = PrivateAttr(default_factory=dict)
    """Each thread's first grader turn not yet given."""
    _raised: dict[tuple[str, str], int] = PrivateAttr(default_factory=dict)
    """``raise`` turns given in each conversation: (thread, pass digest; ``""`` for the worker's)."""
    _log_fd: int | None = PrivateAttr(default=None)
    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "script_sha256": self._script_sha256()}

    def _script_sha256(self) -> str:
        script = json.dumps([self.turns, self.turns_by_task], sort_keys=True, default=str)
        return hashlib.sha256(script.encode()).hexdigest()

    @property
    def calls(self) -> int:
        """How many replies have been replayed, over all threads."""
        return self._calls

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        """Accept any tools; the script decides which calls are made."""
        return self

    def _load_cursors(self, path: Path) -> None:
        """Where an earlier process left the grader's passes and threads (``_read_log``)."""
        if path.exists():
            self._passes, self._next, self._raised = _read_log(path)

    def _cursor_log(self, cursor_dir: Path) -> Path:
        return cursor_dir / f"cursors-{self._script_sha256()[:16]}.tsv"

    def _log(self, line: str) -> None:
        if self._log_fd is not None:
            os.write(self._log_fd, f"{line}\n".encode())

    def _position(self, thread: str, messages: list[BaseMessage], grader: bool) -> tuple[int, str]:
        """The script position of a call (see the class's docstring), and its conversation's digest."""
        replies = sum(isinstance(message, AIMessage) for message in messages)
        if not grader:
            task = current_task()
            earlier = task.earlier_replies if task is not None else 0
            return replies + earlier + self._raised.get((thread, ""), 0), ""
        payload = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
        digest = hashlib.sha256(NONCE.sub(r"\1N", payload).encode()).hexdigest()[:16]
        start = self._passes.get((thread, digest))
        if start is None:
            start = self._passes[(thread, digest)] = self._next.get(thread, 0)
            self._log(f"P\t{thread}\t{digest}\t{start}")
        return start + replies + self._raised.get((thread, digest), 0), digest

    def _take_turn(self, thread: str, messages: list[BaseMessage], grader: bool) -> tuple[int, dict[str, Any]]:
        task = current_task()
        turns = self.turns_by_task.get(task.ref.task_id, self.turns) if task else self.turns
        with self._lock:
            if self._log_fd is None and self.cursor_dir is not None:
                path = self._cursor_log(self.cursor_dir)
                self._load_cursors(path)
                self.cursor_dir.mkdir(parents=True, exist_ok=True)
                self._log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            index, digest = self._position(thread, messages, grader)
            if index >= len(turns):
                raise ScriptError(f"script for {self.model!r} has no reply left after {len(turns)} turns")
            if "raise" in turns[index]:
                raised = self._raised[(thread, digest)] = self._raised.get((thread, digest), 0) + 1
                self._log(f"R\t{thread}\t{digest}\t{raised}")
            self._calls += 1
            return index, _told(turns[index], messages)

    def _finish_turn(self, thread: str, index: int, grader: bool) -> None:
        """A grader turn was given: the thread's script stands after it (one append to the log)."""
        if grader:
            with self._lock:
                if index + 1 > self._next.get(thread, 0):
                    self._next[thread] = index + 1
                    self._log(f"N\t{thread}\t{index + 1}")

    def __del__(self) -> None:
        if self._log_fd is not None:
            os.close(self._log_fd)

    @staticmethod
    def _caller(run_manager: Any) -> tuple[str, bool]:
        """The call's thread, and whether the grader makes it."""
        metadata = getattr(run_manager, "metadata", None) or {}
        return str(metadata.get("thread_id", "default")), GRADER_METADATA_KEY in metadata

    def _reply(self, messages: list[BaseMessage], index: int, turn: dict[str, Any]) -> ChatResult:
        if "raise" in turn:
            raise ScriptedFault(str(turn["raise"]))
        content = str(turn.get("content", ""))
        tool_calls = [
            {"name": call["name"], "args": call.get("args", {}), "id": f"call_{index}_{i}"}
            for i, call in enumerate(turn.get("tool_calls") or [])
        ]
        usage = self._usage(messages, content, tool_calls, turn.get("usage") or {})
        message = AIMessage(
            content=content,
            tool_calls=tool_calls,
            usage_metadata=usage,
            response_metadata={"model_name": self.model, "scripted": True},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    @staticmethod
    def _usage(messages: list[BaseMessage], content: str, tool_calls: list[dict[str, Any]],
               given: dict[str, Any]) -> dict[str, int]:
        """The turn's ``usage`` (``input_tokens``, ``output_tokens``), else an estimate of four characters a token."""
        prompt = "".join(str(m.content) for m in messages)
        output = content + "".join(str(c["args"]) for c in tool_calls)
        usage = {"input_tokens": int(given.get("input_tokens", _estimate_tokens(prompt))),
                 "output_tokens": int(given.get("output_tokens", _estimate_tokens(output)))}
        return {**usage, "total_tokens": usage["input_tokens"] + usage["output_tokens"]}

    def _delay(self, turn: dict[str, Any]) -> float:
        return float(turn.get("latency", self.latency))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        thread, grader = self._caller(run_manager)
        index, turn = self._take_turn(thread, messages, grader)
        if self._delay(turn):
            time.sleep(self._delay(turn))
        self._finish_turn(thread, index, grader)
        return self._reply(messages, index, turn)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        thread, grader = self._caller(run_manager)
        index, turn = self._take_turn(thread, messages, grader)
        if self._delay(turn):
            await asyncio.sleep(self._delay(turn))
        self._finish_turn(thread, index, grader)
        return self._reply(messages, index, turn)


def _told(turn: dict[str, Any], messages: list[BaseMessage]) -> dict[str, Any]:
    """A turn, or its ``when_told`` turn for the first text the message it answers (the latest user
    message) contains."""
    asked = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    return next((alternative for text, alternative in (turn.get("when_told") or {}).items() if text in asked), turn)


def carry_on(source: Path, target: Path) -> None:
    """Let the scripted grader in ``target`` (a regrade's cursor dir) go on where the one in ``source`` stood:
    each thread's next turn, and no pass of ``source``'s to replay."""
    target.mkdir(parents=True, exist_ok=True)
    for log in source.glob("cursors-*.tsv"):
        _, standing, _ = _read_log(log)
        (target / log.name).write_text("".join(f"N\t{thread}\t{at}\n" for thread, at in standing.items()), encoding="utf-8")


def _read_log(path: Path) -> tuple[dict[tuple[str, str], int], dict[str, int], dict[tuple[str, str], int]]:
    """A cursor log's grading passes (``P thread digest start`` lines), where each thread's script stands
    (``N thread next`` lines; a ``thread position`` line, as earlier versions wrote, says the same), and the
    ``raise`` turns given in each conversation (``R thread digest count``)."""
    passes: dict[tuple[str, str], int] = {}
    standing: dict[str, int] = {}
    raised: dict[tuple[str, str], int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if fields[0] in ("P", "R") and len(fields) == 4:
            (passes if fields[0] == "P" else raised)[(fields[1], fields[2])] = int(fields[3])
        elif len(fields) in (2, 3):
            standing[fields[-2]] = max(standing.get(fields[-2], 0), int(fields[-1]))
    return passes, standing, raised
