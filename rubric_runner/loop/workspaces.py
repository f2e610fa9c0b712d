"""What a run keeps of a task's workspace: the seed once per run, and each grading pass's files (and the
final ones) as their changes against it, so that disk per task stays about the bytes the worker changed.

A seed is kept by its digest, ``seeds/<sha256>.json``, which the task's record names (``workspace_seed``):
tasks that start from the same files share one. A run dir written before keeps ``seeds/<task id>.json``.

A pass's files are kept where the pass reads the worker's state (``grader_state``, the runner's part of
``build_grader_state``): ``workspace/attempt-N/`` in the task's record dir holds ``changes.diff`` (a
unified diff, cut to ``rubric.workspace_diff_max_bytes``) and ``changes.json`` (the changed files whole,
the deleted paths, the protected paths among them), from which ``files_at`` rebuilds the pass's files.
The same state gives the same files: a pass redone after a crash writes the same.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, NotRequired

from ..context import current_task
from ..records import AttemptWorkspace, write_atomic
from ..tasks.workspace import Workspace
from ..tools.files import file_text

SEEDS_DIR = "seeds"
"""Where in a run dir the seeds are kept, each once: ``seeds/<sha256>.json``."""
WORKSPACE_DIR = "workspace"
"""Where in a task's record dir its workspaces are kept: ``attempt-N/`` and ``final/``."""
CHANGES, DIFF = "changes.json", "changes.diff"


def texts(files: Mapping[str, Any] | None) -> dict[str, str]:
    """The state's files (path -> FileData) as path -> text (``tools.files.file_text``)."""
    return {path: file_text(data) for path, data in sorted((files or {}).items()) if data is not None}


def seed_path(run_dir: Path, name: str) -> Path:
    """Where ``run_dir`` keeps the seed ``name``: its digest (in a run dir written before, its task's id)."""
    return run_dir / SEEDS_DIR / f"{name}.json"


def keep_seed(run_dir: Path, workspace: Workspace) -> None:
    """The workspace's seed, kept once per run by its digest."""
    path = seed_path(run_dir, workspace.digest)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, workspace.seed_json())


def kept_seed(run_dir: Path, digest: str | None, task_id: str) -> dict[str, str]:
    """The seed of digest ``digest`` (a task record's ``workspace_seed``) as ``run_dir`` keeps it; for a record
    that names none, written before seeds were kept by digest, task ``task_id``'s, ``seeds/<task id>.json``."""
    return json.loads(seed_path(run_dir, digest or task_id).read_text(encoding="utf-8"))


def _diff(seed: Mapping[str, str], files: Mapping[str, str], changed: list[str]) -> str:
    lines: list[str] = []
    for path in changed:
        before, after = seed.get(path), files.get(path)
        lines += difflib.unified_diff((before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True),
                                      "/dev/null" if before is None else f"a{path}", "/dev/null" if after is None else f"b{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def keep(task_dir: Path, name: str, workspace: Workspace, files: Mapping[str, str], cap: int,
         attempt: int | None = None) -> AttemptWorkspace:
    """``files`` kept as their changes against ``workspace``'s seed in ``workspace/<name>/``; what the record says of them."""
    seed = workspace.files
    changed = sorted(path for path in {*seed, *files} if seed.get(path) != files.get(path))
    diff = _diff(seed, files, changed).encode()
    kept = diff[:cap]
    where = task_dir / WORKSPACE_DIR / name
    where.mkdir(parents=True, exist_ok=True)
    record = AttemptWorkspace(attempt=attempt, diff=f"{WORKSPACE_DIR}/{name}/{DIFF}", diff_bytes=len(kept),
                              diff_cut=len(diff) > cap, diff_cap=cap, changed=changed, tampered=workspace.protected_paths(changed))
    write_atomic(where / DIFF, kept.decode("utf-8", "ignore"))
    changes = {"record": record.model_dump(mode="json"), "files": {path: files[path] for path in changed if path in files},
               "deleted": [path for path in changed if path not in files]}
    write_atomic(where / CHANGES, json.dumps(changes, sort_keys=True))
    return record


def kept(task_dir: Path, name: str) -> AttemptWorkspace | None:
    """What ``keep`` recorded in ``workspace/<name>/``, if it is there."""
    path = task_dir / WORKSPACE_DIR / name / CHANGES
    return AttemptWorkspace.model_validate(json.loads(path.read_text(encoding="utf-8"))["record"]) if path.is_file() else None


def files_at(task_dir: Path, name: str, seed: Mapping[str, str]) -> dict[str, str]:
    """The files kept in ``workspace/<name>/``, rebuilt from ``seed`` and their changes."""
    changes = json.loads((task_dir / WORKSPACE_DIR / name / CHANGES).read_text(encoding="utf-8"))
    files = {**seed, **changes["files"]}
    for path in changes["deleted"]:
        files.pop(path, None)
    return dict(sorted(files.items()))


def attempt_name(attempt: int) -> str:
    return f"attempt-{attempt}"


def grader_state(user: Callable[[Any, int], Mapping[str, Any]] | None) -> Callable[[Any, int], dict[str, Any]]:
    """``build_grader_state``: the user's own fields, and the worker's files as this pass reads them (its
    state's ``files``, FileData by path, which the grader's file tools read), kept as the pass's attempt in
    the task's record dir."""
    def build(state: Any, iteration: int) -> dict[str, Any]:
        fields = dict(user(state, iteration)) if user is not None else {}
        files = state.get("files") or {}
        task = current_task()
        if task is not None and task.workspace is not None and task.ref.run_dir:
            keep(Path(task.ref.run_dir), attempt_name(iteration + 1), task.workspace, texts(files),
                 task.workspace_diff_cap, iteration + 1)
        return {**fields, "files": dict(files)}

    return build


def grader_state_schema(user: type | None) -> type:
    """The grader's state schema: the user's (or langchain's ``AgentState``), with the worker's ``files``."""
    from langchain.agents import AgentState

    base = user or AgentState

    class WorkspaceGraderState(base):  # type: ignore[valid-type, misc]  # the base, a TypedDict, is chosen at run time
        files: NotRequired[Annotated[dict[str, Any], "the worker's files at this pass"]]  # type: ignore[valid-type]  # ditto

    return WorkspaceGraderState
