"""The worker's backend (``worker.backend``): where its files live and where ``execute`` runs.

One agent serves every task of a plan, so one backend object does too; the disk backends find the task
at hand through ``context.current_task()`` and work in its own dir, ``<task's record dir>/files/``, a copy
of the files in the worker's state (``mirror``).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepagents.backends import CompositeBackend, StateBackend
from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    ExecuteResponse,
    FileUploadResponse,
    WriteResult,
)
from deepagents.backends.sandbox import BaseSandbox

from ..compat.deepagents import agent_files, confined_files, files_in_state, send_files
from ..config.schema import WorkerBackend, WorkerConfig
from ..context import current_task
from ..sandbox import Limits, ShellSession
from ..tasks.workspace import Workspace
from .mirror import changes, file_data, materialise

if TYPE_CHECKING:  # the classes compat.deepagents makes on first use, as a type checker sees them
    from deepagents.backends import FilesystemBackend as ConfinedFiles
    from deepagents.backends import FilesystemBackend as FilesInState
else:
    ConfinedFiles, FilesInState = confined_files(), files_in_state()

LIVE_DIR = "files"
"""The worker's files on the disk backends, under the task's record dir (beside ``workspace/``, where the
kept attempts are)."""
OUTPUT_CHARS = 30000
"""Characters of a command's output the worker reads (the end of it)."""
SKILLS_ROUTE, MEMORY_ROUTE = "/.skills/", "/.memory/"
"""Where the worker reads its skills dirs and memory files: ``/.skills/N/``, ``/.memory/N/FILE``."""


def task_workspace() -> Path:
    """The dir of the task at hand's files, ``<task's record dir>/files/`` (its context's ``files_dir``,
    which the task run sets on a disk backend), made on first use.

    On ``filesystem`` and ``sandbox`` this dir is the worker's ``/``: a file seeded at ``DIR/src/a.py``
    reads as ``/src/a.py`` in the worker's file tools, and ``execute`` runs in (a copy of) it. Seeding
    a task's files before its first turn writes them here, inside the task's context.
    """
    task = current_task()
    if task is None or task.files_dir is None:
        raise RuntimeError("no task is being worked on here on a disk backend, so there is no workspace")
    path = Path(task.files_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


class TaskFiles(FilesInState):
    """``FilesystemBackend`` in virtual mode, rooted at the task at hand's workspace: ``..``, ``~`` and paths
    that resolve outside it (through a symlink) are refused, and the refusal is the tool's error. Each
    change it makes goes to the calling agent's state too, in the same tool call: the file as it is now on
    disk, or None for each file a delete removed."""

    place = "the workspace"

    def __init__(self) -> None:
        super().__init__(root_dir=None, virtual_mode=True)

    @property
    def cwd(self) -> Path:
        return task_workspace().resolve()

    @cwd.setter
    def cwd(self, _: Path) -> None:
        """``FilesystemBackend.__init__`` sets a fixed root; this backend's follows the task."""

    def _key(self, file_path: str) -> str:
        return f"/{self._resolve_path(file_path).relative_to(self.cwd).as_posix()}"

    def _keep(self, file_path: str) -> None:
        """The file at ``file_path`` put in the agent's state as it is on disk."""
        key = self._key(file_path)
        before = agent_files().get(key) or {}
        send_files({key: file_data(self._resolve_path(file_path).read_bytes(), before.get("created_at"))})

    def write(self, file_path: str, content: str) -> WriteResult:
        result = super().write(file_path, content)
        if result.error is None:
            self._keep(file_path)
        return result

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        result = super().edit(file_path, old_string, new_string, replace_all)
        if result.error is None:
            self._keep(file_path)
        return result

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        responses = super().upload_files(files)
        for response in responses:
            if response.error is None:
                self._keep(response.path)
        return responses

    def delete(self, file_path: str) -> DeleteResult:
        result = super().delete(file_path)
        if result.error is None:
            key = self._key(file_path)
            send_files({path: None for path in agent_files() if path == key or path.startswith(key.rstrip("/") + "/")})
        return result


class TaskSandbox(TaskFiles, BaseSandbox):
    """The task's workspace with ``execute``: a deepagents ``BaseSandbox`` whose commands run under
    ``rubric_runner.sandbox`` (``sandbox.isolation``), each on a copy of the workspace mirrored back when
    it ends, in one sandbox session kept for the task (``ShellSession``: started on its first command,
    closed when the task ends).

    The file tools work on the workspace directly, as ``TaskFiles`` (the paths read alike on both disk
    backends, and a file read starts no command), in place of ``BaseSandbox``'s commands; only commands
    run inside, with run_test_suite's bounds (``Limits``: wall clock, CPU, memory, processes, output, a
    private tmpfs) and its user rules (root's code runs as a user of its own sandbox; an ordinary user's in a user namespace).
    """

    # the file tools' async forms run TaskFiles' own in a thread, as a plain backend's do, not BaseSandbox's commands
    als, aread, awrite, aedit, aglob = (BackendProtocol.als, BackendProtocol.aread, BackendProtocol.awrite,
                                        BackendProtocol.aedit, BackendProtocol.aglob)

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__()
        self.limits = limits or Limits()
        self.starting = threading.Lock()

    @property
    def id(self) -> str:
        task = current_task()
        return f"rubric-sandbox:{task.ref.task_id}-r{task.ref.repeat}" if task is not None else "rubric-sandbox"

    def session(self) -> ShellSession:
        """The task at hand's sandbox session, started (and handed to the task to close) on first use."""
        task = current_task()
        if task is None:
            raise RuntimeError("no task is being worked on here, so there is no sandbox session")
        with self.starting:
            if task.shell is None:
                task.shell = ShellSession(task_workspace(), self.limits)
            return task.shell

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:  # noqa: ASYNC109
        """``execute``, then the command's changes to the workspace (the dir as it left it) sent to the calling
        agent's state with the command's answer."""
        response = await asyncio.to_thread(self.execute, command, timeout=timeout)
        update = await asyncio.to_thread(changes, task_workspace(), agent_files())
        if update:
            send_files(update)
        return response

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        result = self.session().run(command, float(timeout) if timeout else None, OUTPUT_CHARS)
        if result.get("refused"):
            return ExecuteResponse(output=f"sandbox: refused to run the command: {result['refused']}", exit_code=None)
        notes = [f"[sandbox: {result['killed']}]"] if result["killed"] else []
        notes += [f"[sandbox: {result['error']}]"] if result.get("error") else []
        if result["truncated"]:
            notes.insert(0, f"[output cut to its last {OUTPUT_CHARS} characters]")
        output = "\n".join([result["output"], *notes]) if notes else result["output"]
        return ExecuteResponse(output=output, exit_code=result["exit_code"], truncated=result["truncated"])


def seed(kind: WorkerBackend, workspace: Workspace) -> dict[str, Any]:
    """A workspace task's seed, for the agent input's ``files`` before its first turn (returned); on the disk
    backends written into the task's dir too."""
    files = workspace.state_files()
    if kind is not WorkerBackend.state:
        materialise(task_workspace(), files)
    return {"files": files}


def worker_backend(kind: WorkerBackend) -> Any:
    """The backend the plan's worker (and its subagents) share: ``state`` (files in the agent's state and
    checkpoints), ``filesystem`` (``TaskFiles``) or ``sandbox`` (``TaskSandbox``)."""
    if kind is WorkerBackend.sandbox:
        return TaskSandbox()
    if kind is WorkerBackend.filesystem:
        return TaskFiles()
    return StateBackend()


class ReadOnlyFiles(ConfinedFiles):
    """A host dir the worker reads and never changes (a skills dir), or, with ``only``, one file in it (a
    memory file)."""

    def __init__(self, root: Path, only: str | None = None) -> None:
        super().__init__(root_dir=root, virtual_mode=True)
        self.only = only

    place = "the dir"

    def refusal(self, path: Path) -> str | None:
        return None if self.only is None or path in (self.cwd, self.cwd / self.only) else f"only {self.only} is shown here"

    def write(self, file_path: str, content: str) -> WriteResult:
        return WriteResult(error=f"Error: {file_path} is read-only")

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        return EditResult(error=f"Error: {file_path} is read-only")

    def delete(self, file_path: str) -> DeleteResult:
        return DeleteResult(error=f"Error: {file_path} is read-only")

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return [FileUploadResponse(path=path, error="permission_denied") for path, _ in files]


def worker_files(worker: WorkerConfig) -> tuple[Any, list[str] | None, list[str] | None]:
    """The worker's backend, and the sources of its skills and memory for ``create_deep_agent``: each
    skills dir and memory file a read-only route beside the backend (``SKILLS_ROUTE``, ``MEMORY_ROUTE``)."""
    routes: dict[str, Any] = {}
    skills, memory = [], []
    for index, folder in enumerate(worker.skills):
        route = f"{SKILLS_ROUTE}{index}/"
        routes[route] = ReadOnlyFiles(Path(folder).expanduser().resolve())
        skills.append(route)
    for index, file in enumerate(worker.memory):
        path = Path(file).expanduser().resolve()
        route = f"{MEMORY_ROUTE}{index}/"
        routes[route] = ReadOnlyFiles(path.parent, only=path.name)
        memory.append(route + path.name)
    backend = worker_backend(worker.backend)
    return (CompositeBackend(default=backend, routes=routes) if routes else backend), skills or None, memory or None
