"""Places that cannot be written: every command says so in one line naming the path, exits 2, and leaves
the place as it was."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import run_cli

DEMO = ("worker=scripted", "grader=scripted", "rubric=haiku", "run.console=false")


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """``path`` read-only for this process while the block runs: a read-only bind mount as root (root ignores
    file modes), the write bits taken away otherwise."""
    if os.getuid() != 0:
        modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")] if p.is_dir()}
        for p, mode in modes.items():
            p.chmod(mode & ~0o222)
        try:
            yield path
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    for command in (["mount", "--bind", str(path), str(path)], ["mount", "-o", "remount,ro,bind", str(path)]):
        made = subprocess.run(command, capture_output=True, text=True)
        if made.returncode != 0:
            subprocess.run(["umount", str(path)], capture_output=True)
            pytest.skip(f"cannot make a read-only bind mount here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def _listing(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_mtime_ns for p in path.rglob("*")}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A finished run and a finished two-job sweep of the haiku demo."""
    tmp = tmp_path_factory.mktemp("places")
    assert run_cli(*DEMO, f"hydra.run.dir={tmp / 'run'}", cwd=tmp).returncode == 0
    assert run_cli("-m", *DEMO, "grader.max_iterations=2,3", f"hydra.sweep.dir={tmp / 'sweep'}", cwd=tmp).returncode == 0
    return tmp


COMMANDS = {
    "report a sweep": (["report", "{sweep}"], "report: cannot use {sweep}/summary.jsonl: Read-only file system"),
    "report a run": (["report", "{run}"], "report: cannot use {run}/summary.jsonl: Read-only file system"),
    "regrade": (["regrade", "{run}", "grader.max_iterations=2"], "RUN_DIR: cannot write {run}/regrades: Read-only file system"),
    "regrade a sweep": (["regrade", "{sweep}"], "RUN_DIR: cannot write {sweep}/regrades: Read-only file system"),
    "resume": (["resume", "{run}"], "RUN_DIR: cannot write {run}/.lock: Read-only file system"),
    "continue": (["continue", "{run}", "Another one, about snow"], "RUN_DIR: cannot write {run}/tasks/task-r0/turns: Read-only file system"),
    "run into it": ([*DEMO, "hydra.run.dir={place}/new"], "hydra.run.dir: cannot write {place}/new: Read-only file system"),
    "sweep into it": (["-m", *DEMO, "grader.max_iterations=2,3", "hydra.sweep.dir={place}/new"],
                      "hydra.sweep.dir: cannot write {place}/new: Read-only file system"),
}


@pytest.mark.parametrize("case", COMMANDS)
def test_a_read_only_place_is_one_line_and_left_alone(made, tmp_path, case):
    place = tmp_path / "place"
    shutil.copytree(made, place)
    args, said = COMMANDS[case]
    names = {"place": place, "run": place / "run", "sweep": place / "sweep"}
    before = _listing(place)
    with read_only(place):
        proc = run_cli(*(arg.format(**names) for arg in args), cwd=tmp_path)
    expected = said.format(**names)
    if os.getuid() != 0:
        expected = expected.replace("Read-only file system", "Permission denied")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"error: {expected}"), proc.stderr
    assert _listing(place) == before
