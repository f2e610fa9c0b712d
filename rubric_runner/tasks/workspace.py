"""A task's workspace: the files the worker starts from, and the protected globs it must leave alone.

The rubric (``rubric.workspace``, ``rubric.protected``) or a dataset row (``workspace``, ``protected``) names
a directory or gives the files inline (path -> text). A directory is read whole before any model call: a
missing one, one over ``rubric.workspace_max_bytes``, a binary file or a symlink that leaves it is a
``UsageError`` naming the key. Paths are kept as the worker's file tools name them: ``/src/app.py``.
Tasks that name one dir share its files, read once (and with the same protected globs, one ``Workspace``).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from hashlib import sha256
from pathlib import Path
from typing import Any

from ..errors import UsageError

SEEDED_AT = "1970-01-01T00:00:00+00:00"
"""The timestamps a seeded file carries: the same in every run, so a seed's state is the same bytes."""


@dataclass(frozen=True)
class Workspace:
    """The files a task's worker starts from (``/path`` -> text) and its protected globs."""

    files: Mapping[str, str]
    protected: tuple[str, ...] = ()

    def protected_paths(self, paths: Any = None) -> list[str]:
        """The paths of ``paths`` (default: the seed's) that a protected glob matches, sorted."""
        return sorted(path for path in (self.files if paths is None else paths) if self.is_protected(path))

    def is_protected(self, path: str) -> bool:
        """Whether a protected glob matches ``path`` (with or without its leading ``/``)."""
        return any(fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(path.lstrip("/"), glob.lstrip("/"))
                   for glob in self.protected)

    def unmatched(self) -> list[str]:
        """The protected globs that match no file of the seed."""
        return [glob for glob in self.protected if not any(
            fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(path.lstrip("/"), glob.lstrip("/")) for path in self.files)]

    def seed_json(self) -> str:
        """The seed as a run keeps it: path -> text, as JSON with sorted keys."""
        return json.dumps(dict(self.files), sort_keys=True)

    @cached_property
    def digest(self) -> str:
        """The sha256 of ``seed_json``: the same files give the same digest, in any run."""
        return sha256(self.seed_json().encode()).hexdigest()

    def state_files(self) -> dict[str, dict[str, Any]]:
        """The seed as deepagents' state backend holds files (``files`` in the agent's state)."""
        return {path: {"content": text, "encoding": "utf-8", "created_at": SEEDED_AT, "modified_at": SEEDED_AT}
                for path, text in self.files.items()}


def _read_dir(root: Path, key: str, max_bytes: int) -> dict[str, str]:
    """Every file under ``root`` as text, by its ``/relative`` path; refused: binary files, symlinks that
    leave ``root``, more than ``max_bytes`` in all."""
    files, total, real_root = {}, 0, root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink() and not path.resolve().is_relative_to(real_root):
                raise UsageError(key, f"{relative} is a symlink to {os.readlink(path)}, outside the workspace {root}",
                                 "remove the link or copy the file it points to into the workspace")
            data = path.read_bytes()
            total += len(data)
            if total > max_bytes:
                raise UsageError(key, f"{root} holds more than {max_bytes} bytes",
                                 "leave large files out, or raise rubric.workspace_max_bytes")
            try:
                files[f"/{relative}"] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise UsageError(key, f"{relative} is a binary file (not UTF-8 text)",
                                 "the worker's files are text: leave it out of the workspace") from None
            if "\x00" in files[f"/{relative}"]:
                raise UsageError(key, f"{relative} is a binary file (it holds NUL bytes)",
                                 "the worker's files are text: leave it out of the workspace")
    return files


def _inline(files: Mapping[Any, Any], key: str, max_bytes: int) -> dict[str, str]:
    """Inline files, path -> text, each path made ``/relative``."""
    seeded, total = {}, 0
    for path, text in files.items():
        if not isinstance(path, str) or not path.strip("/") or ".." in Path(path).parts or not isinstance(text, str):
            raise UsageError(f"{key}.{path}", "an inline file maps a relative path to its text",
                             "e.g. workspace: {src/app.py: 'print(1)'}")
        total += len(text.encode())
        if total > max_bytes:
            raise UsageError(key, f"the inline files hold more than {max_bytes} bytes", "raise rubric.workspace_max_bytes")
        seeded["/" + path.lstrip("/")] = text
    return seeded


def load_workspace(spec: Any, protected: Any, base: Path, key: str, max_bytes: int,
                   loaded: dict[tuple[Path, tuple[str, ...]], Workspace] | None = None) -> Workspace | None:
    """The workspace ``spec`` names (a dir, relative to ``base``, or inline files), with ``protected``'s globs;
    None for none. ``key`` names the config key (``rubric.workspace``, ``rubric.dataset[3].workspace``).
    ``loaded``: the dirs read so far, by (dir, globs); a dir read before is not read again, and its files are
    shared."""
    globs = _globs(protected, key.rsplit(".", 1)[0] + ".protected")
    if spec is None or spec == "":
        if globs:
            raise UsageError(key.rsplit(".", 1)[0] + ".protected", "names protected files of no workspace",
                             f"set {key} too, or drop the protected globs")
        return None
    if isinstance(spec, Mapping):
        return Workspace(_inline(spec, key, max_bytes), globs)
    if not isinstance(spec, str):
        raise UsageError(key, f"must name a dir or map paths to text, got {spec!r}", "e.g. workspace: repo/")
    root = Path(spec).expanduser()
    root = root if root.is_absolute() else base / root
    if not root.is_dir():
        raise UsageError(key, f"{root} is not a directory", "give the dir of the task's files (relative to the file that names it)")
    loaded, real = {} if loaded is None else loaded, root.resolve()
    if (real, globs) not in loaded:
        files = next((workspace.files for (read, _), workspace in loaded.items() if read == real), None)
        loaded[real, globs] = Workspace(_read_dir(root, key, max_bytes) if files is None else files, globs)
    return loaded[real, globs]


def _globs(protected: Any, key: str) -> tuple[str, ...]:
    if protected is None or protected == "":
        return ()
    if isinstance(protected, str):
        protected = [protected]
    if not isinstance(protected, list | tuple) or not all(isinstance(glob, str) and glob for glob in protected):
        raise UsageError(key, f"must be a list of globs, got {protected!r}", "e.g. protected: [tests/*]")
    return tuple(protected)


def unmatched_protected(tasks: list[Any]) -> list[tuple[str, str]]:
    """(task id, glob) for each protected glob of a task's workspace that matches none of its files."""
    return [(task.id, glob) for task in tasks if task.workspace is not None for glob in task.workspace.unmatched()]
