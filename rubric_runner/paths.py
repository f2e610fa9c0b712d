"""Where the package's own files are: its dir, the Hydra config dir and the bundled data."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CONF_DIR = next(
    (p for p in (PACKAGE_DIR / "conf", PACKAGE_DIR.parent / "conf") if p.is_dir()),
    PACKAGE_DIR.parent / "conf",
)
"""The Hydra configs: in the package when installed from a wheel, else beside it in the source tree."""
DATA_DIR = PACKAGE_DIR / "data"


class Resolver:
    """``os.path.realpath`` for many paths side by side (the records of a run): each parent dir is resolved
    once, a path that is itself a symlink on its own."""

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}

    def __call__(self, path: str | os.PathLike[str]) -> str:
        path = os.fspath(path)
        parent, name = os.path.split(path)
        if name in ("", ".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        resolved = self._dirs.get(parent)
        if resolved is None:
            resolved = self._dirs[parent] = os.path.realpath(parent or ".")
        return os.path.join(resolved, name)
