"""Arguments the commands share: a run dir, or a run or sweep dir."""

from __future__ import annotations

import argparse
from pathlib import Path


def run_dir_argument(value: str) -> Path:
    """A ``RUN_DIR`` argument: the dir of a run, which holds the overrides Hydra saved for it."""
    path = Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a directory (give a run dir, as a run prints after `run dir:`)")
    if not (path / ".hydra" / "overrides.yaml").is_file():
        raise argparse.ArgumentTypeError(f"{value} holds no .hydra/overrides.yaml (give a run dir, as a run prints after `run dir:`)")
    return path.resolve()


def runs_dir_argument(value: str) -> Path:
    """A ``RUN_DIR`` argument that may also be a sweep dir: a run dir, or a dir with run dirs below it."""
    from ..records import find_run_dirs

    path = Path(value)
    if path.is_dir() and not find_run_dirs(path):
        raise argparse.ArgumentTypeError(f"{value} holds no .hydra/overrides.yaml, nor any run dir below it "
                                         "(give a run dir or a sweep dir, as a run or sweep prints)")
    return path.resolve() if path.is_dir() else run_dir_argument(value)
