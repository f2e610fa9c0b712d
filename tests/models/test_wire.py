"""Whole runs through the real ChatOpenAI and ChatAnthropic clients, against loopback fake providers."""

from __future__ import annotations

import json

import pytest
from support.helpers import compose_config, only_task, run_in_process, run_json
from support.wire import (
    FakeServer,
    call,
    model_overrides,
    offers_tool,
    text,
    tool_results,
    verdict,
)

from rubric_runner.config.validate import validate
from rubric_runner.models.build import build_chat_model

FIRST = """def find_duplicates(lst):
    seen = set()
    duplicates = []
    for item in lst:
        if item in seen and item not in duplicates:
            duplicates.append(item)
        seen.add(item)
    return duplicates
"""
SECOND = FIRST.replace("seen = set()", "seen = []").replace("seen.add(item)", "seen.append(item)")
CODE = ("All tests pass in run_test_suite", "The function is named find_duplicates and accepts a single list argument")
HAIKU = ("The poem has three lines", "Lines follow a 5-7-5 syllable pattern", "The theme is spring")


def test_code_rubric_openai_worker_anthropic_grader_with_evidence_tool(tmp_path, fake_keys):
    worker = FakeServer("openai", [text(f"```python\n{FIRST}```"), text(f"```python\n{SECOND}```")])
    grader = FakeServer("anthropic", [
        call("run_test_suite", code=FIRST),
        verdict("needs_revision", (CODE[0], False), (CODE[1], True)),
        call("run_test_suite", code=SECOND),
        verdict("satisfied", (CODE[0], True), (CODE[1], True)),
    ])
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, "rubric=code", *model_overrides("worker", worker), *model_overrides("grader", grader)
        )
    assert (result.status, only_task(result).iterations, result.exit_code) == ("satisfied", 2, 0), result.error
    assert worker.remaining == grader.remaining == 0
    # the real sandboxed test suite ran, and its results went back to the grader over the wire
    evidence = [json.loads(tool_results(grader.requests[i])[-1]) for i in (1, 3)]
    assert [e["ok"] for e in evidence] == [False, True]
    assert "test_unhashable" in evidence[0]["failures"][0]
    # the grader's gap reached the worker as its revision request
    assert f"fix {CODE[0]}" in json.dumps(worker.requests[1].json["messages"])
    assert all(r.path == "/v1/chat/completions" for r in worker.requests)
    assert grader.requests[0].key == fake_keys["ANTHROPIC_API_KEY"]
    assert worker.requests[0].key == fake_keys["OPENAI_API_KEY"]
    record = run_json(run_dir)
    assert record["task"]["usage"]["worker"] == {"calls": 2, "input_tokens": 22, "output_tokens": 14, "total_tokens": 36, "cached_calls": 0}
    assert record["task"]["final_answer"].startswith("```python\ndef find_duplicates")


def test_haiku_anthropic_worker_openai_grader(tmp_path, fake_keys):
    poem = "Blossoms drift and fall\nWarm rain wakes the sleeping seeds\nSpring hums in the grass"
    worker = FakeServer("anthropic", [text(poem)])
    grader = FakeServer("openai", [verdict("satisfied", *((c, True) for c in HAIKU))])
    with worker, grader:
        result, _ = run_in_process(tmp_path, *model_overrides("worker", worker), *model_overrides("grader", grader))
    assert (result.status, only_task(result).final_answer) == ("satisfied", poem)
    assert [r.path for r in worker.requests] == ["/v1/messages"]
    assert only_task(result).usage["grader"].calls == 1 and only_task(result).usage["grader"].total_tokens == 18


def _strategy_seen(request) -> str:
    body = request.json
    native = body.get("response_format") or (body.get("output_config") or {}).get("format")
    system = json.dumps([body.get("system"), body["messages"][0]])  # Anthropic's system prompt, or OpenAI's first message
    if "answer with only a JSON object" in system:
        assert not offers_tool(request, "GraderResponse") and not native
        return "json"
    if offers_tool(request, "GraderResponse") and body.get("tool_choice") in (None, "auto"):
        return "named"
    if native:
        assert native["type"] == "json_schema"
        schema = native.get("json_schema", native)
        assert schema.get("name", "GraderResponse") == "GraderResponse" and "criteria" in json.dumps(schema)
        assert not offers_tool(request, "GraderResponse")
        return "provider"
    assert offers_tool(request, "GraderResponse")
    assert body["tool_choice"] in ("required", {"type": "any"})
    return "tool"


@pytest.mark.parametrize(
    ("protocol", "model", "setting", "expected"),
    [
        ("openai", "local-model", "auto", "tool"),  # an OpenAI-compatible server: auto's probe finds required works
        ("openai", "gpt-4o", "auto", "tool"),
        ("openai", "gpt-4o", "tool", "tool"),
        ("openai", "local-model", "provider", "provider"),
        ("openai", "local-model", "named", "named"),
        ("openai", "local-model", "json", "json"),
        ("anthropic", "claude-haiku-4-5", "auto", "provider"),
        ("anthropic", "claude-haiku-4-5", "tool", "tool"),
        ("anthropic", "local-model", "provider", "provider"),
        ("anthropic", "local-model", "named", "named"),
        ("anthropic", "local-model", "json", "json"),
    ],
)
def test_grader_structured_output_setting(tmp_path, fake_keys, protocol, model, setting, expected):
    worker = FakeServer("openai", [text("Blossoms\nrain\nspring")])
    grader = FakeServer(protocol, [verdict("satisfied", *((c, True) for c in HAIKU))])
    with worker, grader:
        result, _ = run_in_process(
            tmp_path,
            *model_overrides("worker", worker),
            *model_overrides("grader", grader, model, structured_output=setting),
        )
    assert result.status == "satisfied", result.error
    assert _strategy_seen(grader.requests[0]) == expected
    assert (result.header.grader.structured_output, result.header.grader.strategy) == (setting, expected)
    assert bool(grader.probes) == (setting == "auto" and protocol == "openai")


def test_tool_strategy_keeps_evidence_tools_next_to_the_verdict_tool(tmp_path, fake_keys):
    worker = FakeServer("openai", [text(FIRST)])
    grader = FakeServer("openai", [call("run_test_suite", code=SECOND), verdict("satisfied", *((c, True) for c in CODE))])
    with worker, grader:
        result, _ = run_in_process(
            tmp_path, "rubric=code", *model_overrides("worker", worker),
            *model_overrides("grader", grader, "gpt-4o", structured_output="tool"),
        )
    assert result.status == "satisfied", result.error
    assert all(offers_tool(r, "run_test_suite") and offers_tool(r, "GraderResponse") for r in grader.requests)


def test_responses_api_is_chosen_in_config(tmp_path, fake_keys):
    worker = FakeServer("openai", [text("x")])
    with worker:
        result, _ = run_in_process(
            tmp_path, *model_overrides("worker", worker, max_retries=0), "+worker.kwargs.use_responses_api=true",
            "grader=scripted",
        )
    assert [r.path for r in worker.requests] == ["/v1/responses"]  # this server speaks chat completions only
    assert result.status == "error" and "404" in result.error.message


@pytest.mark.parametrize(("base_url", "responses_api"), [(None, True), ("http://127.0.0.1:8000/v1", False)])
def test_base_url_selects_chat_completions(fake_keys, base_url, responses_api):
    overrides = ["worker=gpt"] + ([f"worker.base_url={base_url}"] if base_url else [])
    model = build_chat_model(validate(compose_config(overrides)).worker, "worker")
    assert model.use_responses_api is responses_api
