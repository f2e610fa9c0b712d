"""The docs as data: README.md and every page under docs/, their sections, the files their code blocks show,
and the commands they run, each with the page and line it is on.

A section is a page's ``## `` section (its ``### `` subsections included), named ``<page> > <title>``
(``getting-started.md > Quickstart``, ``README.md > Quickstart``); what comes before a page's first ``## `` is
named by the page's ``# `` title. Pages are read as written; ``expanded`` pages have their generated parts
(``docs/gen/reference.py``) filled in, as the built site shows them.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FILE_LINE = re.compile(r"# ([\w./-]+\.\w+)(?::.*)?")
"""The first line of a code block that shows a file: ``# <path>`` or ``# <path>: what it is``."""
SEPARATOR = " > "


@dataclass(frozen=True)
class Block:
    """One fenced code block, the section it is in, and the line of the page its text starts on."""

    section: str
    lang: str
    text: str
    line: int = 1

    @property
    def page(self) -> str:
        return self.section.split(SEPARATOR, 1)[0]


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_name(path: Path) -> str:
    """``README.md``, or a page's path below docs/ (``getting-started.md``)."""
    return path.name if path == README else path.relative_to(DOCS).as_posix()


def page_path(name: str) -> Path:
    return README if name == README.name else DOCS / name


@cache
def generator():
    """``docs/gen/reference.py``, the build's hook that makes the generated parts of the pages."""
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "gen" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _expanded(markdown: str) -> str:
    """``markdown`` with its generated parts filled in, made once for each text: making them runs the CLI's help."""
    return generator().expand(markdown)


def text(page: str = README.name, expanded: bool = False) -> str:
    """A page's text (the README's by default), its generated parts filled in when ``expanded``."""
    markdown = page_path(page).read_text(encoding="utf-8")
    return _expanded(markdown) if expanded else markdown


def all_text() -> str:
    """Every page's text, one after another."""
    return "\n".join(text(page_name(path)) for path in pages())


def _page_sections(page: str, expanded: bool = False) -> list[tuple[str, str, int]]:
    """``(title, text, line of its first text line)`` of each section of a page."""
    markdown = text(page, expanded)
    heading = re.search(r"^# (.+)$", markdown, re.MULTILINE)
    found, title, start, line = [], heading.group(1) if heading else page, 0, 1
    for match in re.finditer(r"^## (.+)\n", markdown, re.MULTILINE):
        found.append((title, markdown[start:match.start()], line))
        title, start = match.group(1), match.end()
        line = markdown.count("\n", 0, start) + 1
    found.append((title, markdown[start:], line))
    return found


def sections(expanded: bool = False) -> dict[str, str]:
    """Each section's text, by its full name (``page > title``) and, where only one page has that title,
    by its title alone."""
    named, titles = {}, {}
    for path in pages():
        page = page_name(path)
        for title, body, _ in _page_sections(page, expanded):
            named[f"{page}{SEPARATOR}{title}"] = body
            titles.setdefault(title, []).append(body)
    return {**{title: bodies[0] for title, bodies in titles.items() if len(bodies) == 1}, **named}


def blocks() -> list[Block]:
    """Every fenced code block of every page, in order."""
    found = []
    for path in pages():
        page = page_name(path)
        for title, body, line in _page_sections(page):
            for match in re.finditer(r"^```(\w*)\n(.*?)^```", body, re.MULTILINE | re.DOTALL):
                found.append(Block(f"{page}{SEPARATOR}{title}", match.group(1), match.group(2),
                                   line + body.count("\n", 0, match.start(2))))
    return found


def file_path(block: Block) -> str | None:
    """The path a block shows the contents of, named on its first line (after a Hydra ``# @`` header)."""
    lines = [line for line in block.text.splitlines() if not line.startswith("# @")]
    match = FILE_LINE.fullmatch(lines[0]) if lines else None
    return match.group(1) if match else None


def files(section: str) -> dict[str, str]:
    """The files a section shows (by full name, or by title where only one page has it): path -> contents."""
    names = {b.section for b in blocks() if b.section == section or b.section.split(SEPARATOR, 1)[1] == section}
    assert len(names) <= 1, f"{section!r} names sections on several pages: {sorted(names)}"
    return {path: b.text for b in blocks() if b.section in names and (path := file_path(b))}


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
    return [command for command, _ in numbered_commands(block)]


def numbered_commands(block: Block) -> list[tuple[str, int]]:
    """``(command, line of the page it starts on)`` of each command of a ``bash`` block."""
    found, pending, first = [], "", None
    for offset, line in enumerate(block.text.splitlines()):
        first = offset if not pending else first
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        if command := _without_comment(pending + line):
            found.append((" ".join(command.split()), block.line + first))
        pending = ""
    return found


@dataclass(frozen=True)
class Command:
    section: str
    text: str
    line: int

    @property
    def page(self) -> str:
        return self.section.split(SEPARATOR, 1)[0]

    @property
    def where(self) -> str:
        """``docs/<page>:<line>`` (or ``README.md:<line>``), for a failure to name."""
        path = page_path(self.page).relative_to(ROOT).as_posix()
        return f"{path}:{self.line}"


def all_commands() -> list[Command]:
    """Every command of every page's ``bash`` blocks, in order."""
    return [Command(b.section, command, line) for b in blocks() if b.lang == "bash"
            for command, line in numbered_commands(b)]
