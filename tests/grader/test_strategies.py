"""Every structured-output strategy against fake servers that behave as the measured local servers do,
through the real ChatOpenAI client: which ones work, that the grader's evidence calls still happen,
and what a user is told when one cannot work."""

from __future__ import annotations

import inspect
import json

import code_task_solutions
import jsonschema
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from support.helpers import ROOT, only_task, read_events, run_in_process, run_json
from support.wire import (
    FULL,
    LLAMA_CPP,
    LLAMA_CPP_FUNCTIONS,
    NO_STRUCTURE,
    FakeServer,
    call,
    model_overrides,
    text,
    tool_results,
    verdict,
)

from rubric_runner.environment import process_tweaks

GOOD = inspect.getsource(code_task_solutions.find_duplicates)  # passes the code rubric's test suite
CODE = ("All tests pass in run_test_suite", "The function is named find_duplicates and accepts a single list argument")
OK = verdict("satisfied", *((c, True) for c in CODE))
TESTS = call("run_test_suite", code=GOOD)
SERVERS = {"full": FULL, "llama_cpp": LLAMA_CPP, "llama_cpp_functions": LLAMA_CPP_FUNCTIONS}
NO_RETRY = {"max_retries": 0, "timeout": 10}

# (server, grader.structured_output): (the grader's turns, status, strategy used, test runs the grader saw)
MATRIX = {
    ("full", "tool"): ([TESTS, OK], "satisfied", "tool", 1),
    ("full", "provider"): ([TESTS, OK], "satisfied", "provider", 1),
    ("full", "named"): ([TESTS, OK], "satisfied", "named", 1),
    ("full", "json"): ([TESTS, OK], "satisfied", "json", 1),
    ("full", "auto"): ([TESTS, OK], "satisfied", "tool", 1),
    # chatml-function-calling: required is a 500 with an empty error message, json_schema a 500
    ("llama_cpp_functions", "tool"): ([], "grader_error", "tool", 0),
    ("llama_cpp_functions", "provider"): ([], "grader_error", "provider", 0),
    ("llama_cpp_functions", "named"): ([TESTS, OK], "satisfied", "named", 1),
    ("llama_cpp_functions", "json"): ([TESTS, OK], "satisfied", "json", 1),
    ("llama_cpp_functions", "auto"): ([TESTS, OK], "satisfied", "named", 1),
    # the model's own chat template: required is ignored, and a tool call the model makes itself comes back
    # as text. named: the call in text, the verdict forced, sent back for its evidence, the test run
    # forced by name, the verdict in text again, then forced again.
    ("llama_cpp", "tool"): ([TESTS], "grader_error", "tool", 0),
    ("llama_cpp", "provider"): ([], "grader_error", "provider", 0),
    ("llama_cpp", "named"): ([TESTS, OK, TESTS, OK, OK], "satisfied", "named", 1),
    # json cannot force a tool call: the verdict comes back without its evidence, and is recorded so
    ("llama_cpp", "json"): ([TESTS, OK, TESTS, OK], "unsupported", "json", 0),
    ("llama_cpp", "auto"): ([TESTS, OK, TESTS, OK, OK], "satisfied", "named", 1),
}


@pytest.mark.parametrize(("server_name", "setting"), list(MATRIX), ids=[f"{s}-{o}" for s, o in MATRIX])
def test_strategy_on_server(tmp_path, fake_keys, server_name, setting):
    turns, status, strategy, test_runs = MATRIX[server_name, setting]
    worker = FakeServer("openai", [text(f"```python\n{GOOD}```")])
    grader = FakeServer("openai", turns, behaviour=SERVERS[server_name])
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, "rubric=code", "grader.max_iterations=1", *model_overrides("worker", worker, **NO_RETRY),
            *model_overrides("grader", grader, structured_output=setting, **NO_RETRY),
        )
    record = run_json(run_dir)
    assert record["status"] == status, record["error"]
    assert grader.remaining == 0
    assert (record["header"]["grader"]["structured_output"], record["header"]["grader"]["strategy"]) == (setting, strategy)
    ran = [r for request in grader.requests for r in tool_results(request) if '"passed"' in r]
    assert len({r for r in ran}) == test_runs  # the real test suite ran in the sandbox, its result went back
    last = record["task"]["evaluations"][-1]
    if status == "satisfied":
        assert last["result"] == "satisfied" and "unsupported" not in last and "coverage" not in last
    if status == "unsupported":
        assert last["result"] == "satisfied" and last["unsupported"] == {"missing": ["run_test_suite"]}
        assert record["exit_code"] == 1
    if status == "grader_error":
        message = record["error"]["message"]
        assert message.startswith(f"grader openai:local-model at {grader.base_url} (grader.structured_output={setting})")
        assert "(fix: try grader.structured_output=named" in message
    if setting == "auto":
        assert record["header"]["grader"]["probe"][strategy] == "works" and grader.probes


def test_server_errors_quote_the_body_and_name_the_fix(tmp_path, fake_keys):
    """The three failures measured on llama-cpp-python, as the record and the console give them."""
    cases = {
        ("llama_cpp_functions", "tool"): ("HTTP 500: (empty error message)", None),
        ("llama_cpp", "provider"): ("HTTP 500: ", "Input should be 'text' or 'json_object'"),
        ("llama_cpp", "tool"): ("answered in text instead of a verdict", '"name": "run_test_suite"'),
    }
    for (server_name, setting), (cause, quoted) in cases.items():
        turns, *_ = MATRIX[server_name, setting]
        worker = FakeServer("openai", [text(GOOD)])
        grader = FakeServer("openai", list(turns), behaviour=SERVERS[server_name])
        with worker, grader:
            result, run_dir = run_in_process(
                tmp_path / setting / server_name, "rubric=code", "grader.max_iterations=1",
                *model_overrides("worker", worker), *model_overrides("grader", grader, structured_output=setting, **NO_RETRY),
            )
        message = result.error.message
        assert cause in message and (quoted is None or quoted in message), message
        assert "effective_strategy" not in message  # the run's own strategy, not the library's guess
        if setting == "tool" and server_name == "llama_cpp":
            said = only_task(result).evaluations[-1].grader_said
            assert said.startswith("```json") and '"arguments"' in said  # the model wrote its tool call as text
            assert any(e["event"] == "grader_text" and e["text"] == said for e in read_events(run_dir))


HAIKU_OK = verdict("satisfied", ("The poem has three lines", True), ("Lines follow a 5-7-5 syllable pattern", True),
                   ("The theme is spring", True))


def test_auto_probes_once_per_run(tmp_path, fake_keys):
    """Two tasks, one grader server: one round of probes, before any task runs; the record says what they found."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": name, "task": "Write a haiku."}) + "\n" for name in ("a", "b")))
    worker = FakeServer("openai", [text("x"), text("y")])
    grader = FakeServer("openai", [HAIKU_OK, HAIKU_OK], behaviour=LLAMA_CPP_FUNCTIONS)
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, f"rubric.dataset={tasks}", *model_overrides("worker", worker),
            *model_overrides("grader", grader, **NO_RETRY),
        )
    assert result.status == "satisfied", result.tasks
    assert [r.json.get("tool_choice") for r in grader.probes] == ["required", {"type": "function", "function": {"name": "structured_output_probe"}}]
    assert result.header.grader.probe == {"tool": "HTTP 500: (empty error message)", "named": "works"}
    jsonschema.validate(run_json(run_dir), json.loads((ROOT / "schemas" / "run.schema.json").read_text()))
    assert run_json(run_dir)["header"]["grader"]["strategy"] == "named"
    for name in ("a-r0", "b-r0"):  # the run's tasks, each graded with the strategy its header names
        record = run_json(run_dir / "tasks" / name)
        jsonschema.validate(record, json.loads((ROOT / "schemas" / "task.schema.json").read_text()))
        assert record["status"] == "satisfied" and record["usage"]["grader"]["calls"] == 1


def test_runs_in_one_process_probe_a_server_once(tmp_path, fake_keys):
    """The jobs of a basic sweep run in one process: the second run reuses what the first probe found."""
    worker = FakeServer("openai", [text("x"), text("y")])
    grader = FakeServer("openai", [HAIKU_OK, HAIKU_OK], behaviour=LLAMA_CPP_FUNCTIONS)
    with worker, grader, process_tweaks():  # a process that runs many runs opts in, as the command line does
        records = [run_in_process(tmp_path / name, "rubric=haiku", *model_overrides("worker", worker),
                                  *model_overrides("grader", grader, **NO_RETRY))[0] for name in ("one", "two")]
    assert [r.status for r in records] == ["satisfied", "satisfied"]
    assert len(grader.probes) == 2  # one round: the tool probe refused, the named one works
    assert [(r.header.grader.strategy, r.header.grader.probe) for r in records] == [
        ("named", {"tool": "HTTP 500: (empty error message)", "named": "works"})] * 2


def test_auto_with_no_working_shape_says_what_it_tried(tmp_path, fake_keys):
    worker = FakeServer("openai", [])
    grader = FakeServer("openai", [], behaviour=NO_STRUCTURE)
    with worker, grader:
        result, _ = run_in_process(tmp_path, *model_overrides("worker", worker), *model_overrides("grader", grader))
    assert result.status == "error" and result.error.key == "grader.structured_output"
    assert result.exit_code == 2 and grader.requests == []
    for tried in ("tool: ignored: answered in text", "named: ignored: answered in text", "provider: HTTP 500",
                  "json: accepted, but the reply is not JSON"):
        assert tried in result.error.message


def test_json_repairs_count_against_max_model_calls(tmp_path, fake_keys):
    worker = FakeServer("openai", [text("a poem")])
    grader = FakeServer("openai", [text("It looks fine to me."), text("Still fine."), text("Fine!")], behaviour=LLAMA_CPP)
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, "grader.max_iterations=1", *model_overrides("worker", worker),
            *model_overrides("grader", grader, structured_output="json", max_model_calls=3, **NO_RETRY),
        )
    assert result.status == "grader_error" and grader.remaining == 0
    assert [r.json.get("response_format") for r in grader.requests] == [None, {"type": "json_object"}, {"type": "json_object"}]
    assert "not a valid GraderResponse" in json.dumps(grader.requests[1].json["messages"][-1])
    assert "run limit (3/3)" in result.error.message and "raise grader.max_model_calls" in result.error.message
    assert only_task(result).evaluations[-1].grader_said == "Fine!"


def test_named_repairs_a_broken_verdict_with_the_tool_forced(tmp_path, fake_keys):
    broken = verdict("satisfied", ("c", True))
    broken.verdict["criteria"][0]["passed"] = False  # satisfied with a failing criterion: not a valid GraderResponse
    haiku = ("The poem has three lines", "Lines follow a 5-7-5 syllable pattern", "The theme is spring")
    worker = FakeServer("openai", [text("a poem")])
    grader = FakeServer("openai", [broken, verdict("satisfied", *((c, True) for c in haiku))], behaviour=LLAMA_CPP_FUNCTIONS)
    with worker, grader:
        result, _ = run_in_process(
            tmp_path, *model_overrides("worker", worker), *model_overrides("grader", grader, structured_output="named"),
        )
    assert result.status == "satisfied", result.error
    assert grader.requests[0].json.get("tool_choice") is None
    assert grader.requests[1].json["tool_choice"] == {"type": "function", "function": {"name": "GraderResponse"}}
    assert "Not a valid GraderResponse" in json.dumps(grader.requests[1].json["messages"])


def test_named_forces_the_verdict_when_a_forced_evidence_call_comes_back_as_text(tmp_path, fake_keys):
    worker = FakeServer("openai", [text(GOOD)])
    # the verdict without its evidence; the test run forced by name, answered in text; the verdict forced
    grader = FakeServer("openai", [OK, text("I cannot run the tests."), OK], behaviour=LLAMA_CPP_FUNCTIONS)
    with worker, grader:
        result, _ = run_in_process(
            tmp_path, "rubric=code", "grader.max_iterations=1",
            *model_overrides("worker", worker), *model_overrides("grader", grader, structured_output="named"),
        )
    assert [r.json.get("tool_choice") for r in grader.requests] == [
        None, {"type": "function", "function": {"name": "run_test_suite"}},
        {"type": "function", "function": {"name": "GraderResponse"}}]
    assert (result.status, result.exit_code) == ("unsupported", 1), result.error
    assert only_task(result).evaluations[-1].unsupported.missing == ["run_test_suite"]


@pytest.mark.parametrize("reply", [
    AIMessage(content="", tool_calls=[{"name": "run_test_suite", "args": {"code": "x"}, "id": "c1"}]),
    AIMessage(content="", invalid_tool_calls=[{"name": "run_test_suite", "args": "{oops", "id": "c1", "error": "bad"}]),
    AIMessage(content=""),
], ids=["tool-calls", "malformed-tool-calls", "empty"])
def test_no_assistant_message_reaches_a_local_server_with_null_content(reply):
    """What the real OpenAI client would send after each kind of textless reply, once ToolCallContent filled it."""
    from langchain.agents.middleware import ModelRequest
    from langchain_openai import ChatOpenAI

    from rubric_runner.models.quirks import filled_content

    client = ChatOpenAI(model="local", base_url="http://127.0.0.1:9/v1", api_key="unused")
    messages = [HumanMessage("write it"), reply]
    assert client._get_request_payload(messages)["messages"][1]["content"] in (None, "")  # the client alone
    request = ModelRequest(model=client, messages=messages, system_prompt=None, tools=[], state={}, runtime=None)
    sent = filled_content(request).messages
    assert client._get_request_payload(sent)["messages"][1]["content"] == " "
    assert messages[1].content == ""  # the agent's own message is unchanged
