"""A second identical run of each bundled demo with the same ``run.cache`` makes no live model call and ends
the same way: nothing a model receives changes from run to run unless the task does."""

from __future__ import annotations

from pathlib import Path

import pytest

import rubric_runner
from rubric_runner.records import RunRecord, load_task, record_dirs

DEMOS = {
    "code": ["rubric=code"],
    "code_tasks": ["rubric=code_tasks"],
    "haiku": ["rubric=haiku"],
    "summary": ["rubric=summary"],
    "humaneval": ["rubric=humaneval", "rubric.tasks=[0:5]"],
}


def _outcomes(record: RunRecord) -> list[tuple]:
    """Each task's status, live and cached calls, and hidden-check outcomes of its first and final answers."""
    tasks = [record.task] if record.task is not None else [load_task(d) for d in record_dirs(Path(record.run_dir))[1:]]
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
