"""A chat model that replays a script of replies: offline runs, tests and demos."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import yaml
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr


class ScriptError(ValueError):
    """The script file is missing, malformed, or has no reply left to give."""


def load_script(path: str | Path, section: str) -> list[dict[str, Any]]:
    """Read one section (``worker`` or ``grader``) of a YAML script file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScriptError(f"script file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ScriptError(f"script file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get(section), list):
        raise ScriptError(f"script file {path} has no list under '{section}:'")
    for index, turn in enumerate(data[section]):
        if not isinstance(turn, dict) or not ({"content", "tool_calls", "raise"} & set(turn)):
            raise ScriptError(
                f"{path}: {section}[{index}] must be a mapping with content, tool_calls or raise"
            )
    return data[section]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedChatModel(BaseChatModel):
    """Replays ``turns`` in order, one per model call; labelled ``scripted`` everywhere.

    A turn is a mapping with ``content`` (text), ``tool_calls`` (a list of
    ``{name, args}``), or ``raise`` (a message: the call fails with
    ``ScriptError``, standing in for a provider failure). Optional ``latency``
    (seconds) delays the reply. Usage is estimated at four characters a token.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "scripted"
    turns: list[dict[str, Any]] = Field(default_factory=list)
    latency: float = 0.0
    cursor_path: Path | None = None
    """Where the position in the script is kept, so a resumed run continues the script."""
    _cursor: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any) -> None:
        """Pick up the position a previous, interrupted process reached."""
        if self.cursor_path is not None and self.cursor_path.exists():
            self._cursor = int(self.cursor_path.read_text() or 0)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> int:
        """How many turns have been replayed so far."""
        return self._cursor

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        """Accept any tools; the script decides which calls are made."""
        return self

    def _next_turn(self) -> dict[str, Any]:
        with self._lock:
            if self._cursor >= len(self.turns):
                raise ScriptError(
                    f"script for {self.model!r} has no reply left after {len(self.turns)} turns"
                )
            turn = self.turns[self._cursor]
            self._cursor += 1
            return turn

    def _save_cursor(self) -> None:
        """Record a finished turn; a call cut short is replayed by the next process."""
        if self.cursor_path is not None:
            with self._lock:
                self.cursor_path.write_text(str(self._cursor))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = self._next_turn()
        delay = float(turn.get("latency", self.latency))
        if delay:
            time.sleep(delay)
        self._save_cursor()
        if "raise" in turn:
            raise ScriptError(str(turn["raise"]))
        content = str(turn.get("content", ""))
        tool_calls = [
            {"name": call["name"], "args": call.get("args", {}), "id": f"call_{self._cursor}_{i}"}
            for i, call in enumerate(turn.get("tool_calls") or [])
        ]
        prompt = "".join(str(m.content) for m in messages)
        output = content + "".join(str(c["args"]) for c in tool_calls)
        usage = {
            "input_tokens": _estimate_tokens(prompt),
            "output_tokens": _estimate_tokens(output),
        }
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(
            content=content,
            tool_calls=tool_calls,
            usage_metadata=usage,
            response_metadata={"model_name": self.model, "scripted": True},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
