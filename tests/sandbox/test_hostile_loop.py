"""Hostile code written by the worker, tested by the grader's run_test_suite, through the whole loop:
each run ends in bounded time with a clear verdict, and the machine is left clean."""

from __future__ import annotations

import os
import time

import pytest
from support.helpers import read_events, run_scripted, verdict, write_script
from support.hostile import adopting, left_behind

pytestmark = pytest.mark.slow  # each run waits out a hostile program's limits

FLAG = "/tmp/rubric-runner-hostile-flag"
HOSTILE = {
    "infinite loop": ("def find_duplicates(lst):\n    while True:\n        pass\n", "CPU time limit exceeded"),
    "memory hog": ("def find_duplicates(lst):\n    return [bytearray(10**9)]\n", "MemoryError"),
    "fork bomb": ("import os\ndef find_duplicates(lst):\n    while True:\n        os.fork()\n", "Resource temporarily unavailable"),
    "reads env": ("import os\ndef find_duplicates(lst):\n    return [os.environ['OPENAI_API_KEY']]\n", "KeyError: 'OPENAI_API_KEY'"),
    "writes outside": (f"def find_duplicates(lst):\n    open({FLAG!r}, 'w').write('x')\n    return []\n", None),
    "floods output": ("def find_duplicates(lst):\n    print('x' * 10**8)\n", "output limit of 8 MiB exceeded"),
}
LIMITS = ("wall_seconds=3", "cpu_seconds=1", "memory_mb=256")
OWN_LIMIT_FIRST = {"infinite loop", "floods output"}
"""Cases that must end by their own limit: a wall clock with room to spare, so that on a loaded machine
the wall clock does not win the race."""


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_worker_code_ends_with_a_clear_verdict(tmp_path, monkeypatch, name):
    code, reason = HOSTILE[name]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-FAKEhostileKEY0123456789")
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": code}],
        grader=[
            {"tool_calls": [{"name": "run_test_suite", "args": {"code": code}}]},
            verdict("needs_revision", ("All tests pass in run_test_suite", False)),
        ],
    )
    started = time.monotonic()
    with adopting():
        result, run_dir = run_scripted(
            tmp_path, script, "rubric=code", "grader.max_iterations=1",
            *(f"+grader.tools.run_test_suite.{limit}" for limit in LIMITS),
            *(["grader.tools.run_test_suite.wall_seconds=30"] if name in OWN_LIMIT_FIRST else []),
        )
        assert time.monotonic() - started < 30
        assert left_behind(2.0) == []
    assert result.status == "max_iterations_reached" and result.exit_code == 1
    (end,) = [e for e in read_events(run_dir) if e["event"] == "tool_call_end" and e["tool"] == "run_test_suite"]
    assert '"ok": false' in end["output"]
    if reason:
        assert reason in end["output"], end["output"]
    assert not os.path.exists(FLAG)
    assert "sk-proj-FAKEhostileKEY0123456789" not in (run_dir / "events.jsonl").read_text()
