"""``rubric_runner.run``: the typed record from Python; runs one after another and at once in threads
of one process each write only their own files and leave the process as they found it."""

from __future__ import annotations

import gc
import logging
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
import structlog
from support.helpers import read_events, scripted_overrides, verdict, write_script

import rubric_runner
from rubric_runner.errors import UsageError
from rubric_runner.records import RunRecord, Status


def process_state() -> dict:
    """What a run must leave as it found it."""
    from langsmith import _runtime_overrides

    root = logging.getLogger()
    return {
        "handlers": list(root.handlers), "level": root.level, "structlog": structlog.get_config(),
        "langsmith": _runtime_overrides.get_runtime_overrides().aio_to_thread, "frozen": gc.get_freeze_count(),
        "signals": (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)),
    }


def _own_events_only(run_dir, thread_id: str) -> None:
    events = read_events(run_dir)
    names = [e["event"] for e in events]
    assert names.count("run_start") == 1 and names.count("run_end") == 1, names
    assert f"run.thread_id={thread_id}" in events[0]["overrides"]
    assert names.count("token_usage") == 2  # one worker call and one grader call: this run's, none of the other's


def test_run_returns_the_typed_record_and_keeps_the_config(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    record = rubric_runner.run(scripted_overrides(script), run_dir=tmp_path / "run")
    assert isinstance(record, RunRecord) and (record.status, record.exit_code) == (Status.SATISFIED, 0)
    assert (tmp_path / "run" / ".hydra" / "overrides.yaml").is_file()  # so `rubric-runner resume` can continue it


def test_runs_one_after_another_in_one_process(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    before = process_state()
    for index in range(2):
        record = rubric_runner.run([*scripted_overrides(script), f"run.thread_id=seq{index}"], run_dir=tmp_path / f"run{index}")
        assert record.status is Status.SATISFIED
        _own_events_only(tmp_path / f"run{index}", f"seq{index}")
        assert process_state() == before


def test_runs_at_once_in_threads_write_only_their_own_events(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x", "latency": 0.5}],
                          grader=[{**verdict("satisfied", ("c", True)), "latency": 0.5}])
    before = process_state()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(rubric_runner.run, [*scripted_overrides(script), f"run.thread_id=t{index}"], tmp_path / f"run{index}")
                   for index in range(2)]
        records = [future.result(timeout=120) for future in futures]
    assert [record.status for record in records] == [Status.SATISFIED] * 2
    first, second = ([datetime.fromisoformat(r.started_at), datetime.fromisoformat(r.ended_at)] for r in records)
    assert first[0] < second[1] and second[0] < first[1], "the two runs did not overlap"
    for index in range(2):
        _own_events_only(tmp_path / f"run{index}", f"t{index}")
    assert process_state() == before


def test_overrides_that_do_not_compose_raise_one_line(tmp_path):
    with pytest.raises(UsageError, match=r"^grader: 'grader/nope' not found \(use one of: "):
        rubric_runner.run(["grader=nope"], run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()
