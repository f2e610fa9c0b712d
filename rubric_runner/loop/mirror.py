"""The disk backends' ``files/`` dir as a copy of the worker's state: the checkpoint is the truth.

On ``filesystem`` and ``sandbox`` the worker's files live in its state's ``files``, as on ``state``, and the
task's dir holds the same files, where the file tools and ``execute`` work. A file tool's change goes to
both in the same tool call (``backends.TaskFiles``), a command's changes to the dir go to the state with its
answer (``backends.TaskSandbox.aexecute``), so each checkpoint holds the files as the messages it holds left
them. Before a task goes on from a checkpoint (a resume, a follow-up turn), ``restore`` makes the dir hold
what the checkpoint holds: each file that differs written whole, what the state has no file for removed.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..compat.langgraph import TOOL_NODE, called_graph
from ..records import write_atomic
from ..tools.files import file_bytes

if TYPE_CHECKING:
    from deepagents.backends.protocol import FileData

FILES = "files"
"""The state's key of the worker's files (deep agents' FileData by ``/path``)."""


def file_data(raw: bytes, created_at: str | None = None) -> FileData:
    """``raw`` as the state backend keeps a file: its text, or its base64 when it is not UTF-8 (as its
    ``upload_files`` keeps a binary file)."""
    from deepagents.backends.utils import create_file_data

    try:
        return create_file_data(raw.decode("utf-8"), created_at)
    except UnicodeDecodeError:
        return create_file_data(base64.b64encode(raw).decode("ascii"), created_at, "base64")


def dir_files(root: Path) -> dict[str, bytes]:
    """The files under ``root`` by ``/relative`` path, as their bytes; symlinks left out."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if not path.is_symlink():
                found[f"/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return dict(sorted(found.items()))


def changes(root: Path, files: Mapping[str, Any]) -> dict[str, Any]:
    """What makes ``files`` (the state's) hold what the dir ``root`` holds: each file new or changed there,
    None for each one gone (a ``files`` update)."""
    now = dir_files(root)
    update: dict[str, Any] = {path: file_data(raw, (files.get(path) or {}).get("created_at"))
                              for path, raw in now.items() if path not in files or file_bytes(files[path]) != raw}
    update.update({path: None for path in files if path not in now})
    return update


def _place(root: Path, path: str) -> Path:
    """Where the state's file ``path`` goes under ``root``; a path that would leave it is refused."""
    parts = PurePosixPath(path).parts[1:]
    if not parts or ".." in parts:
        raise ValueError(f"the worker's state holds a file {path!r}, which has no place in its workspace")
    return root.joinpath(*parts)


def materialise(root: Path, files: Mapping[str, Any]) -> None:
    """Make ``root`` hold ``files`` (the state's) and nothing else: each file that differs written whole
    (through a temp file renamed over it), the files, symlinks and dirs that ``files`` has no place for removed."""
    wanted = {_place(root, path): file_bytes(data) for path, data in files.items()}
    needed = {parent for target in wanted for parent in target.parents}
    root.mkdir(parents=True, exist_ok=True)
    for folder, dirs, names in os.walk(root, topdown=False):
        for path in (Path(folder, name) for name in [*names, *dirs]):
            if path.is_symlink() or (path.is_file() and path not in wanted):
                path.unlink()
            elif path.is_dir() and path not in needed:
                shutil.rmtree(path)
    for target, raw in wanted.items():
        if not (target.is_file() and target.read_bytes() == raw):
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, raw)


async def saved_files(agent: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The worker's files a thread goes on with: its last checkpoint's with the writes of the step's tasks
    that finished (LangGraph's state of the thread), and the changes of each subagent a task to be run again
    called, which goes on from its own checkpoint."""
    state = await agent.aget_state(config)
    files = dict(state.values.get(FILES) or {})
    called = [task for task in state.tasks if task.name == TOOL_NODE and task.result is None]
    if called:
        began = (await agent.aget_state(state.config)).values.get(FILES) or {}  # the step's files, as each task began
        for task in called:
            inner = (await agent.aget_state(called_graph(config, task))).values.get(FILES)
            if inner is None:  # it called no subagent, or one that saved nothing yet
                continue
            for path in began.keys() - inner.keys():
                files.pop(path, None)
            files.update({path: data for path, data in inner.items() if began.get(path) != data})
    return files


async def restore(agent: Any, config: dict[str, Any], root: Path) -> None:
    """Make the dir ``root`` hold the files the thread goes on with (none, for a new thread)."""
    await asyncio.to_thread(materialise, root, await saved_files(agent, config))
