"""A sandbox session (``ShellSession``): one sandbox for a workspace's commands, each run on the workspace as
the last command left it, nothing of a command left running when the next starts."""

from __future__ import annotations

import os
import signal

import pytest

from rubric_runner.sandbox import Limits, ShellSession, choose, isolation_setting

ISOLATIONS = [
    pytest.param("auto", marks=pytest.mark.skipif(choose("auto").backend is None, reason="nothing isolates here")),
    pytest.param("namespaces", marks=[pytest.mark.bwrap,  # the tier of the namespace backend's tests
                                      pytest.mark.skipif(os.getuid() != 0, reason="the namespace backend needs root")]),
    "none",
]


@pytest.fixture(params=ISOLATIONS)
def session(request, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("seeded\n")
    with isolation_setting(request.param), ShellSession(workspace, Limits(wall_seconds=3)) as opened:
        yield opened


def test_each_command_sees_the_workspace_as_the_last_one_left_it(session):
    first = session.run("cat a.txt; echo made > b.txt; rm a.txt")
    second = session.run("ls; cat b.txt")
    assert (first["exit_code"], first["output"]) == (0, "seeded\n")
    assert (second["exit_code"], second["output"]) == (0, "b.txt\nmade\n")
    assert sorted(path.name for path in session.workspace.iterdir()) == ["b.txt"]


def test_a_file_changed_on_the_host_between_commands_is_seen_by_the_next(session):
    session.run("true")
    (session.workspace / "a.txt").write_text("changed on the host\n")
    assert session.run("cat a.txt")["output"] == "changed on the host\n"


def test_what_a_command_leaves_running_is_ended_before_the_next_starts(session):
    started = session.run("sleep 60 & echo $!")
    assert started["exit_code"] == 0
    left = session.run(f"kill -0 {started['output'].strip()} 2>/dev/null && echo running || echo ended")
    assert left["output"] == "ended\n"


def test_a_command_past_its_wall_clock_changes_nothing_and_the_session_goes_on(session):
    session.run("true")
    process = session.process
    stopped = session.run("echo half > half.txt; rm a.txt; sleep 30", wall_seconds=1)
    assert stopped["timed_out"] and stopped["killed"] == "wall-clock limit of 1s exceeded", stopped
    assert sorted(path.name for path in session.workspace.iterdir()) == ["a.txt"]
    after = session.run("ls")
    assert after["output"] == "a.txt\n", after  # nothing half-kept
    assert session.process is process  # the same sandbox


def test_a_sandbox_that_died_is_started_again_for_the_next_command(session):
    session.run("true")
    os.killpg(session.process.pid, signal.SIGKILL)
    session.process.wait()
    again = session.run("cat a.txt")
    assert (again["exit_code"], again["output"]) == (0, "seeded\n")


def test_a_workspace_dir_replaced_under_the_session_is_the_one_commands_see(session):
    session.run("true")
    workspace = session.workspace
    workspace.rename(workspace.with_name("old"))
    workspace.mkdir()
    (workspace / "fresh.txt").write_text("new dir\n")
    assert session.run("ls")["output"] == "fresh.txt\n"


def test_closing_ends_the_sandbox(session):
    session.run("true")
    process = session.process
    session.close()
    assert process.poll() is not None and session.process is None


def test_a_sandbox_that_cannot_start_is_the_commands_error_with_its_last_word(tmp_path, monkeypatch):
    from rubric_runner.sandbox import run
    from rubric_runner.sandbox import session as sessions

    def broken(backend, workdir, import_paths):
        started = run.launch(backend, workdir, import_paths)
        return run.Launch(["/bin/sh", "-c", "echo 'bwrap: cannot do that here' >&2; exit 1"], started.env,
                          started.workdir, started.parent_pid)

    monkeypatch.setattr(sessions, "launch", broken)
    with isolation_setting("none"), ShellSession(tmp_path) as session:
        result = session.run("true")
    assert result["exit_code"] is None
    assert result["error"] == "the sandbox exited with code 1 before the command ended: bwrap: cannot do that here"
