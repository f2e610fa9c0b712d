"""scripts/system-packages: what a failed or impossible install of the Debian packages says, and its exit code."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.helpers import ROOT

SCRIPT = ROOT / "scripts" / "system-packages"


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(tmp_path: Path, uid: int, apt_status: int | None) -> subprocess.CompletedProcess:
    """The script with only fakes on PATH: no chromium nor bwrap, ``id -u`` saying ``uid``, and an apt-get
    exiting ``apt_status`` (None: no apt-get)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "id", f"echo {uid}")
    if apt_status is not None:
        _fake(bin_dir, "apt-get", f"echo \"$@\" >> {tmp_path / 'apt.log'}; exit {apt_status}")
    return subprocess.run(["/bin/bash", str(SCRIPT)], env={"PATH": str(bin_dir)}, capture_output=True, text=True, timeout=30)


def test_a_failed_install_as_root_fails_and_says_what_is_lost(tmp_path):
    proc = _run(tmp_path, 0, apt_status=100)
    assert proc.returncode == 1
    assert "apt-get could not install chromium bubblewrap" in proc.stderr
    assert "without bubblewrap, run_test_suite cannot isolate generated code for an ordinary user" in proc.stderr
    assert "fix: run scripts/setup again once apt-get works" in proc.stderr
    assert "DPkg::Lock::Timeout=300" in (tmp_path / "apt.log").read_text()  # waits for another apt's lock


def test_an_install_as_root_that_works_passes(tmp_path):
    proc = _run(tmp_path, 0, apt_status=0)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "install -y chromium bubblewrap" in (tmp_path / "apt.log").read_text()


def test_an_ordinary_user_is_told_what_goes_without_the_packages(tmp_path):
    proc = _run(tmp_path, 1000, apt_status=0)
    assert proc.returncode == 0 and not (tmp_path / "apt.log").exists()
    assert "not installed (installing them needs root and apt-get): chromium bubblewrap" in proc.stderr
    assert "without chromium, the HTML report's browser tests are skipped" in proc.stderr
