"""A second identical run of each bundled demo with the same ``run.cache`` makes no live model call and ends
the same way: nothing a model receives changes from run to run unless the task does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import rubric_runner
from rubric_runner.records import RunRecord, task_records

DEMOS = {
    "code": ["rubric=code"],
    "code_tasks": ["rubric=code_tasks"],
    "haiku": ["rubric=haiku"],
    "summary": ["rubric=summary"],
    "humaneval": ["rubric=humaneval", "rubric.tasks=[0:5]"],
}


def _outcomes(record: RunRecord) -> list[tuple]:
    """Each task's status, live and cached calls, and hidden-check outcomes of its first and final answers."""
    tasks = task_records(record)
    return [(t.task_id, t.status, sum(u.calls for u in t.usage.values()), sum(u.cached_calls for u in t.usage.values()),
             t.verification and (t.verification.first.outcome, t.verification.final.outcome)) for t in tasks]


@pytest.mark.parametrize("demo", DEMOS)
def test_a_second_identical_run_is_answered_from_the_cache(tmp_path, demo):
    overrides = ["worker=scripted", "grader=scripted", "run.console=false", f"run.cache={tmp_path / 'cache.sqlite'}",
                 *DEMOS[demo]]
    first = _outcomes(rubric_runner.run(overrides, tmp_path / "first"))
    second = _outcomes(rubric_runner.run(overrides, tmp_path / "second"))
    assert all(live > 0 and cached == 0 for _, _, live, cached, _ in first), first
    assert [(task, status, 0, live, checks) for task, status, live, _, checks in first] == second


def _wire_run(tmp_path: Path, worker_reply: str, *extra: str):
    """A run of the real OpenAI (worker) and Anthropic (grader) clients against local servers, with fake keys
    in the environment and sent in a header of each, cached in ``tmp_path/run.cache``."""
    from support.helpers import SCRIPTED_EVIDENCE, run_cli
    from support.wire import FAKE_KEYS, FakeServer, model_overrides, text, verdict

    worker = FakeServer("openai", [text(worker_reply)])
    grader = FakeServer("anthropic", [verdict("satisfied", ("c", True))])
    with worker, grader:
        return run_cli(*model_overrides("worker", worker, max_retries=0), *model_overrides("grader", grader, max_retries=0),
                       "+worker.kwargs.default_headers={x-api-key: ${oc.env:OPENAI_API_KEY}}",
                       "+grader.kwargs.default_headers={x-proxy-token: ${oc.env:ANTHROPIC_API_KEY}}",
                       SCRIPTED_EVIDENCE, f"run.cache={tmp_path / 'run.cache'}", *extra, cwd=tmp_path, env=FAKE_KEYS)


def test_the_cache_keeps_no_key_at_rest_neither_a_header_nor_one_in_a_reply(tmp_path):
    import subprocess

    from support.wire import FAKE_KEYS

    done = _wire_run(tmp_path, f"the key is {FAKE_KEYS['OPENAI_API_KEY']}", f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 0, done.stderr
    files = sorted(str(p) for p in tmp_path.glob("run.cache*"))
    assert files and sqlite3.connect(files[0]).execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2
    for key in FAKE_KEYS.values():
        assert subprocess.run(["grep", "-c", key, *files], capture_output=True).returncode == 1, key  # 1: no line matched
    labels = sorted(row[0] for row in sqlite3.connect(files[0]).execute("SELECT llm FROM responses"))
    assert labels == ["ChatAnthropic claude-haiku-4-5", "ChatOpenAI local-model"]
    assert "the key is [REDACTED]" in sqlite3.connect(files[0]).execute("SELECT group_concat(value) FROM responses").fetchone()[0]


def test_a_cache_that_holds_a_key_in_clear_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    from support.wire import FAKE_KEYS

    cache = tmp_path / "run.cache"
    with sqlite3.connect(cache) as old:  # as an earlier version left it: the model's parameters, headers and all
        old.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, llm TEXT NOT NULL, value TEXT NOT NULL, "
                    "created_at TEXT NOT NULL DEFAULT (datetime('now')))")
        old.execute("INSERT INTO responses (key, llm, value) VALUES ('k', ?, '[]')",
                    (f'{{"kwargs": {{"default_headers": {{"x-api-key": "{FAKE_KEYS["OPENAI_API_KEY"]}"}}}}}}',))
    before = cache.read_bytes()
    done = _wire_run(tmp_path, "an answer", f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: run.cache: {cache} holds a provider key in clear (an earlier version "
                                        f"stored request headers) (delete it, rm {cache}*, and its replies are asked for "
                                        "again; or set run.cache=null)"]
    assert cache.read_bytes() == before
