"""The worker's answers in a transcript: its final answer, its first, and the one each grading pass saw."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from ..compat.deepagents import GRADER_SOURCE
from ..records import ATTEMPT_CHARS

RETURNED = "loop_returned"
"""The ``name`` of the copy of an earlier attempt the loop's policy restores as the final message
(``loop.returns``): the final answer, never an attempt of its own."""


def _answer(messages: list[Any]) -> AIMessage | None:
    """The worker's last message without tool calls."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message
    return None


def final_answer(messages: list[Any]) -> str | None:
    """The worker's answer: the text of its last message without tool calls."""
    answer = _answer(messages)
    return None if answer is None else answer.text


def first_answer(messages: list[Any]) -> str | None:
    """The worker's answer to the latest user message (a thread's last turn) before the grader's first
    revision request; with none, the final answer."""
    asked = max((index for index, message in enumerate(messages)
                 if isinstance(message, HumanMessage) and message.name != GRADER_SOURCE), default=0)
    for index in range(asked, len(messages)):
        message = messages[index]
        if isinstance(message, HumanMessage) and message.name == GRADER_SOURCE:
            return final_answer(messages[:index])
    return final_answer(messages)


def attempt_messages(messages: list[Any]) -> list[AIMessage]:
    """The worker's answer before each of the grader's revision requests, and its last one, since the
    latest user message (a follow-up turn's answers only); an attempt the loop's policy restored is none."""
    asked = [i for i, m in enumerate(messages) if getattr(m, "type", None) == "human" and getattr(m, "name", None) != GRADER_SOURCE]
    turn = messages[asked[-1] + 1:] if asked else messages
    attempts, start = [], 0
    for end, message in enumerate([*turn, None]):
        if message is None or getattr(message, "name", None) in (GRADER_SOURCE, RETURNED):
            answer = _answer(turn[start:end])
            if answer is not None:
                attempts.append(answer)
            start = end + 1
    return attempts


def attempt_answers(messages: list[Any]) -> list[str]:
    """The text of each of ``attempt_messages``, in full."""
    return [message.text for message in attempt_messages(messages)]


def graded_attempts(messages: list[Any]) -> list[str]:
    """``attempt_answers``, each cut to ``ATTEMPT_CHARS`` characters."""
    return [answer if len(answer) <= ATTEMPT_CHARS else answer[:ATTEMPT_CHARS] + "\u2026" for answer in attempt_answers(messages)]
