"""The grader's tools over the worker's files as a grading pass reads them, registered as the built-in tools are.

Each reads the ``files`` the runner puts in the grader's state (``loop.workspaces.grader_state``), filled in
by LangGraph's tool node once the tool is bound (``plugins.registry.bind_settings``), never shown to the
model: ``ls``, ``read_file`` (offset, limit), ``glob`` and ``grep`` read them (deep agents' offloaded ``/large_tool_results/*`` included) and change nothing;
``run_tests`` runs the task's test command in the sandbox over a copy of them, the protected files put
back as the task's seed has them. ``workspace_tests`` is the hidden check of a workspace task: the same
run over an attempt's files with the hidden tests added.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.tools import InjectedToolArg, tool
from pydantic import DirectoryPath, Field, PositiveFloat, PositiveInt

from ..compat.deepagents import glob_files
from ..context import current_task
from ..sandbox import Limits, run_on_files
from .builtin import steady

if TYPE_CHECKING:
    from deepagents.backends.protocol import FileData


class FromState(InjectedToolArg):
    """Marks a tool argument the agent's state fills (its ``key``), as LangGraph's ``InjectedState(key)`` does
    once the tool is bound (``plugins.registry.bind_settings``); its own marker, so that listing tools
    imports no LangGraph."""

    def __init__(self, key: str) -> None:
        self.key = key


Files = Annotated[dict[str, Any] | None, FromState("files")]
"""The worker's files at this pass (path -> deep agents' FileData), from the agent's state."""
READ_LINES = 200
"""The lines ``read_file`` gives when the grader asks for no limit."""


def file_bytes(data: FileData) -> bytes:
    """A file of the state's ``files`` (deep agents' FileData) as its bytes: its text, or its base64 content
    decoded (a binary file a command wrote on a disk backend)."""
    from deepagents.backends.utils import file_data_to_string

    content = file_data_to_string(data)
    return base64.b64decode(content) if data.get("encoding") == "base64" else content.encode("utf-8")


def file_text(data: FileData) -> str:
    """A file of the state's ``files`` as text, decoded from its bytes (not UTF-8: read with replacements)."""
    return file_bytes(data).decode("utf-8", "replace")


@tool
async def ls(path: str = "/", files: Files = None) -> str:
    """List the files and directories directly under a directory of the worker's workspace (default: /)."""
    base = "/" + path.strip("/")
    prefix = base.rstrip("/") + "/"
    entries = sorted({prefix + name.split("/", 1)[0] + ("/" if "/" in name else "")
                      for name in (p[len(prefix):] for p in files or {} if p.startswith(prefix))})
    return "\n".join(entries) if entries else f"No files under {base}"


@tool
async def read_file(file_path: str, offset: int = 0, limit: int = READ_LINES, files: Files = None) -> str:
    """Read a file of the worker's workspace, with line numbers: ``limit`` lines from line ``offset`` (0-based)."""
    from deepagents.backends.utils import format_content_with_line_numbers

    path = "/" + file_path.lstrip("/")
    if files is None or path not in files:
        return f"Error: File '{path}' not found"
    lines = file_text(files[path]).splitlines()
    offset, limit = max(int(offset), 0), max(int(limit), 0)
    if lines and offset >= len(lines):
        return f"Error: Line offset {offset} exceeds file length ({len(lines)} lines)"
    window = lines[offset:offset + limit]
    more = f"\n[{len(lines) - offset - len(window)} more lines: read on with offset={offset + len(window)}]" if offset + len(window) < len(lines) else ""
    return (format_content_with_line_numbers(window, start_line=offset + 1) if window else "(empty)") + more


@tool
async def glob(pattern: str, path: str = "/", files: Files = None) -> str:
    """Find the worker's files whose path matches a glob pattern (e.g. ``**/*.py``), under ``path``."""
    return glob_files(files or {}, pattern, path)


@tool
async def grep(pattern: str, path: str = "/", glob: str | None = None, files: Files = None) -> str:
    """Find the lines of the worker's files that contain ``pattern`` (literal text), under ``path``, in files
    matching ``glob`` if given."""
    from deepagents.backends.utils import format_grep_matches, grep_matches_from_files

    found = grep_matches_from_files(files or {}, pattern, path, glob)
    if found.error:
        return f"Error: {found.error}"
    return format_grep_matches(found.matches or [], "content")


@tool
def run_tests(
    files: Files = None,
    command: Annotated[str | None, InjectedToolArg, Field(description="the task's test command, run in the workspace's root")] = None,
    wall_seconds: Annotated[PositiveFloat, InjectedToolArg, Field(description="wall-clock limit")] = 60.0,
    cpu_seconds: Annotated[PositiveInt, InjectedToolArg, Field(description="CPU time limit")] = 30,
    memory_mb: Annotated[PositiveInt, InjectedToolArg, Field(description="address-space limit in MiB")] = 1024,
    output_chars: Annotated[PositiveInt, InjectedToolArg, Field(description="the most characters of output returned")] = 4000,
) -> str | dict:
    """Run the task's tests on the worker's workspace as it is now, in a sandbox, with the protected files
    (the tests) as the task gave them. Returns whether they passed, the command's exit code and the end of
    its output, line by line."""
    if not command:
        return "ok: false\nrun_tests has no test command configured"
    task = current_task()
    workspace = task.workspace if task is not None else None
    tree = {path: file_text(data) for path, data in (files or {}).items()}
    if workspace is not None:
        tree.update({path: workspace.files[path] for path in workspace.protected_paths()})
    limits = Limits(wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, memory_mb=memory_mb)
    return _as_text(run_on_files(tree, command, limits, output_chars), output_chars)


def _as_text(result: dict[str, Any], output_chars: int) -> str | dict:
    """A test run as its model reads it: a header line, then the output as it was printed (greppable, and
    readable by line when deep agents move a long one to a file); a refusal stays the sandbox's result."""
    if result.get("refused"):
        return steady(result)
    ended = f"exit code {result.get('exit_code')}"
    if result.get("killed"):
        ended = f"killed: {result['killed']}"
    elif result.get("error"):
        ended = result["error"]
    return (f"ok: {str(bool(result.get('ok'))).lower()} ({ended}; `{result.get('isolation')}` sandbox)\n"
            f"--- the last {output_chars} characters of its output at most ---\n{result.get('output', '')}")


def _hidden_files(root: Path, under: str) -> dict[str, str]:
    """The hidden test files of ``root``, by the workspace paths they take (under ``under``)."""
    base = "/" + under.strip("/")
    return {f"{base.rstrip('/')}/{path.relative_to(root).as_posix()}": path.read_text(encoding="utf-8")
            for path in sorted(root.rglob("*")) if path.is_file()}


@tool
def workspace_tests(
    workspace: dict[str, str],
    tests: Annotated[DirectoryPath, InjectedToolArg, Field(description="the dir of hidden test files, which no model sees")],
    command: Annotated[str, InjectedToolArg, Field(description="the command that runs them, in the workspace's root")],
    tests_at: Annotated[str, InjectedToolArg, Field(description="the workspace dir the hidden files are put in")] = "/",
    wall_seconds: Annotated[PositiveFloat, InjectedToolArg, Field(description="wall-clock limit")] = 60.0,
    cpu_seconds: Annotated[PositiveInt, InjectedToolArg, Field(description="CPU time limit")] = 30,
    memory_mb: Annotated[PositiveInt, InjectedToolArg, Field(description="address-space limit in MiB")] = 1024,
) -> dict:
    """A hidden check of a workspace task (``rubric.verify``): the hidden tests put into the attempt's files
    (path -> text, its protected files as the seed has them) and ``command`` run over them in the sandbox;
    ok when it exits 0."""
    tree = {**workspace, **_hidden_files(Path(tests), tests_at)}
    return steady(run_on_files(tree, command, Limits(wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, memory_mb=memory_mb)))
