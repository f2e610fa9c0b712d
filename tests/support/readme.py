"""The README as data: its sections, the files its code blocks show, and the commands they run."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
FILE_LINE = re.compile(r"# ([\w./-]+\.\w+)(?::.*)?")
"""The first line of a code block that shows a file: ``# <path>`` or ``# <path>: what it is``."""


@dataclass(frozen=True)
class Block:
    """One fenced code block and the ``## `` section it is in."""

    section: str
    lang: str
    text: str


def text() -> str:
    """The README's text."""
    return README.read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    """Each ``## `` section's title and text (its ``### `` subsections included)."""
    parts = re.split(r"^## (.+)\n", text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def blocks() -> list[Block]:
    """Every fenced code block, in order."""
    return [
        Block(title, lang, body)
        for title, body in sections().items()
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", body, re.MULTILINE | re.DOTALL)
    ]


def file_path(block: Block) -> str | None:
    """The path a block shows the contents of, named on its first line (after a Hydra ``# @`` header)."""
    lines = [line for line in block.text.splitlines() if not line.startswith("# @")]
    match = FILE_LINE.fullmatch(lines[0]) if lines else None
    return match.group(1) if match else None


def files(section: str) -> dict[str, str]:
    """The files a section shows: path -> contents."""
    return {path: b.text for b in blocks() if b.section == section and (path := file_path(b))}


def _without_comment(line: str) -> str:
    """The line up to the ``#`` that starts a shell comment (one outside quotes), stripped."""
    words = shlex.split(line, comments=True)
    for match in re.finditer(r"(?:^|\s)#", line):
        head = line[: match.start()]
        try:
            if shlex.split(head) == words:
                return head.strip()
        except ValueError:  # this # is inside quotes
            continue
    return line.strip()


def commands(block: Block) -> list[str]:
    """The shell commands of a ``bash`` block: continuation lines joined, comments and blank lines left out,
    runs of spaces collapsed."""
    joined = re.sub(r"\\\n", " ", block.text)
    return [" ".join(command.split()) for line in joined.splitlines() if (command := _without_comment(line))]


def all_commands() -> list[tuple[str, str]]:
    """``(section, command)`` of every command in the README's ``bash`` blocks, in order."""
    return [(b.section, command) for b in blocks() if b.lang == "bash" for command in commands(b)]
