"""Replies that are no plain answer, through the real ChatOpenAI and ChatAnthropic clients against the
loopback servers: a stream cut before its finish, a reply without a choice or not JSON (in a run and in
``auto``'s probe), a server down, a refusal, a tool call whose arguments do not parse."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration
from support.helpers import read_events, run_in_process, run_json
from support.wire import (
    FakeServer,
    call,
    fault,
    hang,
    model_overrides,
    raw,
    refusal,
    text,
    unfinished,
    verdict,
)

from rubric_runner.models.cache import SQLiteResponseCache

OK = verdict("satisfied", ("c", True))
FAST = {"max_retries": 1, "timeout": 0.5}
STREAM = "+{role}.kwargs.streaming=true"
EMPTY_CHOICES = raw(json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}).encode())
NOT_JSON = raw(b"upstream said no")


def _run(tmp_path, worker, grader, *extra, worker_settings=None, grader_settings=None):
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, "grader.max_iterations=1", *extra,
            *model_overrides("worker", worker, **{**FAST, **(worker_settings or {})}),
            *model_overrides("grader", grader, **{**FAST, **(grader_settings or {})}),
        )
    return result, run_json(run_dir), read_events(run_dir)


def _names(role, server, model=None):
    model = model or ("local-model" if server.protocol == "openai" else "claude-haiku-4-5")
    return f"{role} {server.protocol}:{model} at {server.base_url}"


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_cut_stream_is_retried_and_never_graded(tmp_path, fake_keys, protocol):
    worker = FakeServer(protocol, [unfinished("the ans"), text("the answer")])
    grader = FakeServer("openai", [OK])
    _, record, events = _run(tmp_path, worker, grader, STREAM.format(role="worker"))
    assert (record["status"], record["task"]["final_answer"]) == ("satisfied", "the answer"), record["error"]
    assert record["task"]["flagged_replies"] == [{"agent": "worker", "kind": "incomplete", "detail": "the ans"}]
    assert [e["detail"] for e in events if e["event"] == "reply_incomplete"] == ["the ans"]
    assert worker.remaining == grader.remaining == 0 and all(r.json["stream"] for r in worker.requests)
    graded = json.dumps(grader.requests[0].json["messages"])
    assert "the answer" in graded and "the ans" not in graded.replace("the answer", "")  # the cut reply never reached the grader


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_stream_cut_on_every_retry_ends_the_run_without_a_verdict(tmp_path, fake_keys, protocol):
    worker = FakeServer(protocol, [unfinished("half an"), unfinished("half an")])
    grader = FakeServer("openai", [])
    _, record, _ = _run(tmp_path, worker, grader, STREAM.format(role="worker"))
    assert (record["status"], record["exit_code"], record["error"]["type"]) == ("error", 3, "IncompleteReply")
    assert record["error"]["message"].startswith(f"{_names('worker', worker)}: the reply's stream ended before its finish")
    assert "(fix: raise worker.max_retries" in record["error"]["message"]
    assert grader.requests == [] and record["task"]["evaluations"] == []  # nothing was graded
    assert [f["kind"] for f in record["task"]["flagged_replies"]] == ["incomplete", "incomplete"]


def test_a_cut_grader_stream_is_a_grader_error_of_the_pass(tmp_path, fake_keys):
    worker = FakeServer("openai", [text("the answer")])
    grader = FakeServer("anthropic", [unfinished("{\"result\": \"sat"), unfinished("{\"result\": \"sat")])
    _, record, _ = _run(tmp_path, worker, grader, STREAM.format(role="grader"))
    assert record["status"] == "grader_error" and record["exit_code"] == 3
    message = record["error"]["message"]
    assert message.startswith(_names("grader", grader)) and "the reply's stream ended before its finish" in message
    assert [(f["agent"], f["kind"]) for f in record["task"]["flagged_replies"]] == [("grader", "incomplete")] * 2


def test_the_cache_keeps_no_cut_reply(tmp_path):
    cache = SQLiteResponseCache(tmp_path / "cache.sqlite")
    cut = AIMessage("the ans", response_metadata={"model_provider": "openai"})
    whole = AIMessage("the answer", response_metadata={"model_provider": "openai", "finish_reason": "stop"})
    cache.update("p1", "llm", [ChatGeneration(message=cut)])
    cache.update("p2", "llm", [])
    cache.update("p3", "llm", [ChatGeneration(message=whole)])
    assert cache.lookup("p1", "llm") is None and cache.lookup("p2", "llm") is None
    assert cache.lookup("p3", "llm")[0].message.text == "the answer" and cache.entries() == 1


# id: (role, protocol, turns, what the line says after the role, model and address)
MALFORMED = {
    "worker-empty-choices": ("worker", "openai", [EMPTY_CHOICES], "the reply has no choices"),
    "worker-not-json": ("worker", "openai", [NOT_JSON], "the reply could not be read as the API's JSON (JSONDecodeError"),
    "worker-anthropic-not-json": ("worker", "anthropic", [NOT_JSON], "the reply could not be read as the API's JSON"),
    "grader-empty-choices": ("grader", "openai", [EMPTY_CHOICES], "the reply has no choices"),
    "grader-not-json": ("grader", "openai", [NOT_JSON], "the reply could not be read as the API's JSON"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_names_the_role_model_and_address(tmp_path, fake_keys, case):
    role, protocol, turns, said = MALFORMED[case]
    bad = FakeServer(protocol, turns)
    worker, grader = (bad, FakeServer("openai", [])) if role == "worker" else (FakeServer("openai", [text("a")]), bad)
    _, record, _ = _run(tmp_path, worker, grader, grader_settings={"structured_output": "tool"})
    assert record["status"] == ("error" if role == "worker" else "grader_error") and record["exit_code"] == 3
    message = record["error"]["message"]
    assert message.startswith(_names(role, bad)), message
    assert said in message and f"(fix: check that {role}.base_url is the API's root" in message
    assert "list index out of range" not in message


# id: (probe turns, what the line says, its fix)
PROBE_FAULTS = {
    "empty-choices": ([EMPTY_CHOICES], "the reply to auto's probe has no choices", "check that grader.base_url"),
    "not-json": ([NOT_JSON], "the reply to auto's probe could not be read as the API's JSON", "check that grader.base_url"),
    "503": ([fault(503)], "HTTP 503: simulated fault", "the server is down or overloaded"),
    "timeout": ([hang(3)], "APITimeoutError", "raise grader.timeout"),
}


@pytest.mark.parametrize("case", list(PROBE_FAULTS))
def test_a_fault_during_the_probe_is_the_servers_not_the_configs(tmp_path, fake_keys, case):
    probes, said, fix = PROBE_FAULTS[case]
    worker, grader = FakeServer("openai", []), FakeServer("openai", [], probe_turns=probes)
    result, record, _ = _run(tmp_path, worker, grader)
    assert (record["status"], record["exit_code"], record["error"]["type"]) == ("error", 3, "ProviderFault")
    message = record["error"]["message"]
    assert message.startswith(f"{_names('grader', grader)} (grader.structured_output=auto, probing tool): {said}"), message
    assert f"(fix: {fix}" in message and "verdict shapes" not in message
    assert len(grader.probes) == 1 and worker.requests == []  # no more probes, no task


@pytest.mark.parametrize(("protocol", "status", "fix"), [
    ("openai", 503, "the server is down or overloaded: try again later, or raise grader.max_retries"),
    ("anthropic", 500, "see the server's log for the cause"),
])
def test_a_grader_5xx_is_the_servers_failure_not_a_tool_choice(tmp_path, fake_keys, protocol, status, fix):
    worker, grader = FakeServer("openai", [text("a")]), FakeServer(protocol, [fault(status)] * 2)
    _, record, _ = _run(tmp_path, worker, grader)
    message = record["error"]["message"]
    assert record["status"] == "grader_error" and f"HTTP {status}: simulated fault (fix: {fix})" in message
    assert "tool_choice" not in message and "structured_output=named" not in message


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_refusal_is_an_event_and_a_field_of_the_record(tmp_path, fake_keys, protocol):
    worker = FakeServer(protocol, [refusal("I can't help with that.")])
    grader = FakeServer("openai", [verdict("needs_revision", ("c", False))])
    _, record, events = _run(tmp_path, worker, grader)
    assert record["task"]["flagged_replies"] == [{"agent": "worker", "kind": "refusal", "detail": "I can't help with that."}]
    assert [(e["agent"], e["detail"]) for e in events if e["event"] == "model_refusal"] == [("worker", "I can't help with that.")]


def test_an_invalid_tool_call_is_an_event_and_a_field_of_the_record(tmp_path, fake_keys):
    worker = FakeServer("openai", [call("write_file", arguments='{"file_path": "a.py", ')])
    grader = FakeServer("openai", [verdict("needs_revision", ("c", False))])
    _, record, events = _run(tmp_path, worker, grader)
    (flag,) = record["task"]["flagged_replies"]
    assert (flag["agent"], flag["kind"]) == ("worker", "invalid_tool_call")
    assert flag["detail"].startswith("write_file: Function write_file arguments:") and "not valid JSON" in flag["detail"]
    assert [e["detail"] for e in events if e["event"] == "invalid_tool_call"] == [flag["detail"]]
