"""No room to write (a full file system, a file at its size limit): one line naming the file and the fix, exit 3,
the record marked as the run ended (when it can still be written), ``events.jsonl`` whole; a resume, given room,
finishes the run. As root on a small tmpfs, as an ordinary user on one, and under ``RLIMIT_FSIZE`` as whoever runs
the tests."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox.test_isolation import _cli_for_user, installed_for_user, ordinary_user  # noqa: F401 (fixtures)
from support.helpers import SCRIPTED_EVIDENCE, run_cli, verdict, write_dataset, write_script

from rubric_runner.observe.events import event_log

OK = verdict("satisfied", ("c", True))
TASKS = 30
NO_PLUGINS = ("~grader.tools.count_syllables", "~rubric.verify.count_syllables")
"""The default rubric without its plugin's tool: the ordinary user's view of the package has no plugins."""


def _overrides(folder: Path, run_dir: Path) -> list[str]:
    script = write_script(folder / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = write_dataset(folder / "tasks.jsonl", [f"t{i}" for i in range(TASKS)])
    return ["worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}", SCRIPTED_EVIDENCE,
            *NO_PLUGINS, f"rubric.dataset={data}", f"hydra.run.dir={run_dir}"]


def _events_whole(run_dir: Path) -> list[dict]:
    text = (run_dir / "events.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _stopped(code: int, stdout: str, stderr: str, run_dir: Path) -> None:
    """How a run that found no room ends: exit 3, one error line naming a file of its dir, no traceback."""
    assert code == 3, stdout + stderr
    assert "Traceback" not in stdout + stderr and len((stdout + stderr).splitlines()) < 10, stdout + stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: cannot write {run_dir}/"), stderr
    assert errors[0].endswith(f"(free space on its file system, or raise the file size limit (ulimit -f); then "
                              f"`rubric-runner resume {run_dir}` goes on from the last checkpoint)"), errors[0]
    _events_whole(run_dir)
    record = json.loads((run_dir / "result.json").read_text())
    if record["status"] != "running":  # no room even for the record: a resume takes the run over as a killed one
        assert (record["status"], record["exit_code"], record["error"]["type"]) == ("error", 3, "NoSpace")
        assert record["error"]["message"] == errors[0].removeprefix("error: ")


def _finished(run_dir: Path) -> None:
    record = json.loads((run_dir / "result.json").read_text())
    assert (record["status"], record["aggregate"]["statuses"], record["resumed"]) == ("satisfied", {"satisfied": TASKS}, 1)
    _events_whole(run_dir)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only), unmounted on the way out."""
    if os.getuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the RLIMIT_FSIZE test is the ordinary user's)")
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _grow(where: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True)


def test_a_full_file_system_is_one_line_and_a_resume_with_room_finishes_the_run(tmp_path):
    with _tmpfs(tmp_path / "fs", "300k") as fs:
        run_dir = fs / "run"
        proc = run_cli(*_overrides(tmp_path, run_dir), cwd=tmp_path)
        _stopped(proc.returncode, proc.stdout, proc.stderr, run_dir)
        _grow(fs, "64m")
        resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        _finished(run_dir)


def test_a_file_at_its_size_limit_is_one_line_and_a_resume_without_it_finishes_the_run(tmp_path):
    run_dir = tmp_path / "run"
    limit = 100_000  # bytes: the checkpoints' write-ahead log reaches it after a few tasks

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run([sys.executable, "-m", "rubric_runner", *_overrides(tmp_path, run_dir)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, preexec_fn=limited)
    _stopped(proc.returncode, proc.stdout, proc.stderr, run_dir)
    resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    _finished(run_dir)


def test_a_full_file_system_as_an_ordinary_user(ordinary_user, installed_for_user, tmp_path):  # noqa: F811
    scratch = ordinary_user.tree / "scratch"
    with _tmpfs(scratch / "fs", "300k") as fs:
        os.chown(fs, ordinary_user.uid, ordinary_user.gid)
        run_dir = fs / "run"  # the script and the task set go in scratch, where the user can read them
        command, env = _cli_for_user(ordinary_user, installed_for_user, *_overrides(scratch, run_dir))
        proc = subprocess.run(command, env=env, cwd=scratch, capture_output=True, text=True, timeout=300)
        _stopped(proc.returncode, proc.stdout, proc.stderr, run_dir)
        assert os.stat(run_dir / "events.jsonl").st_uid == ordinary_user.uid
        _grow(fs, "64m")
        command, env = _cli_for_user(ordinary_user, installed_for_user, "resume", str(run_dir))
        resumed = subprocess.run(command, env=env, cwd=scratch, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        _finished(run_dir)


def test_a_torn_last_line_is_cut_when_the_events_are_opened_again(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "run_start"}\n{"event": "token_us', encoding="utf-8")  # a process killed mid-line
    with event_log(path) as log:
        log.info("run_resumed")
    assert [json.loads(line)["event"] for line in path.read_text(encoding="utf-8").splitlines()] == ["run_start", "run_resumed"]
    path.write_text('{"event": "torn, with no line before it', encoding="utf-8")
    with event_log(path) as log:
        log.info("run_start")
    assert [json.loads(line)["event"] for line in path.read_text(encoding="utf-8").splitlines()] == ["run_start"]
