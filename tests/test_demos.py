"""The haiku and summary demos: the scripted grader calls the real plugin tools, and its verdicts agree;
the hidden verification runs the same tools on the first and the final answer."""

from __future__ import annotations

import json

from conftest import compose_config, read_events
from rubric_runner.runner import execute as run


def _demo(tmp_path, rubric: str):
    overrides = ["worker=scripted", "grader=scripted", f"rubric={rubric}", "run.console=false", "run.preview_chars=100000"]
    result = run(compose_config(overrides), tmp_path / "run", overrides)
    outputs = [json.loads(e["output"]) for e in read_events(tmp_path / "run") if e["event"] == "tool_call_end"]
    return result, outputs


def test_haiku_demo_counts_syllables_for_real(tmp_path):
    result, outputs = _demo(tmp_path, "haiku")
    assert (result.status, result.iterations, result.exit_code) == ("satisfied", 2, 0)
    assert [o["syllables"] for o in outputs] == [[7, 7, 5], [5, 7, 5]]
    assert [o["matches_pattern"] for o in outputs] == [False, True]
    assert outputs[0]["problems"] == ["line 1: 7 syllables, expected 5"]
    assert outputs[0]["lines"][0]["words"] in result.evaluations[0].criteria[1].gap
    assert [e.result for e in result.evaluations] == ["needs_revision", "satisfied"]
    first, final = result.verification.first, result.verification.final
    assert (first.outcome, final.outcome) == ("failed", "passed")
    assert first.checks[0].details["problems"] == ["line 1: 7 syllables, expected 5"]


def test_summary_demo_checks_terms_for_real(tmp_path):
    result, outputs = _demo(tmp_path, "summary")
    assert (result.status, result.iterations, result.exit_code) == ("satisfied", 2, 0)
    assert [o["sentence_count"] for o in outputs] == [1, 1]
    assert [o["missing_terms"] for o in outputs] == [["chlorophyll"], []]
    first = {c.name: c.passed for c in result.evaluations[0].criteria}
    assert first == {"The answer is one sentence": True, "The answer mentions light and chlorophyll": False}
    assert (result.verified("first"), result.verified("final")) == (False, True)
    assert result.verification.first.checks[0].details["missing_terms"] == ["chlorophyll"]
