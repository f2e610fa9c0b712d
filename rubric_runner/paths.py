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
