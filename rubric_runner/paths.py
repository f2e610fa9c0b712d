"""Where the package's own files are: its dir, the Hydra config dir and the bundled data."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CONF_DIR = next(
    (p for p in (PACKAGE_DIR / "conf", PACKAGE_DIR.parent / "conf") if p.is_dir()),
    PACKAGE_DIR.parent / "conf",
)
"""The Hydra configs: in the package when installed from a wheel, else beside it in the source tree."""
DATA_DIR = PACKAGE_DIR / "data"


class Resolver:
    """``Path.resolve()`` for many paths side by side (the records of a run): each parent dir is resolved once,
    a path that is itself a symlink on its own."""

    def __init__(self) -> None:
        self._dirs: dict[Path, Path] = {}

    def __call__(self, path: str | Path) -> Path:
        path = Path(path)
        if path.name in ("", ".", "..") or path.is_symlink():
            return path.resolve()
        parent = self._dirs.get(path.parent)
        if parent is None:
            parent = self._dirs[path.parent] = path.parent.resolve()
        return parent / path.name
