"""Faults injected by the fake providers: transient ones are retried away, persistent ones end the run
with the right status and their cause in result.json."""

from __future__ import annotations

import pytest
from support.helpers import run_in_process, run_json
from support.wire import (
    FakeServer,
    cut,
    fault,
    hang,
    model_overrides,
    raw,
    text,
    verdict,
)

ANSWER = text("the answer")
OK = verdict("satisfied", ("c", True))
CONTRADICTS = verdict("satisfied", ("c", False))  # GraderResponse rejects 'satisfied' with a failing criterion
HTML = raw(b"<html>502 bad gateway</html>", content_type="text/html")
HALF_JSON = raw(b'{"id": "x", "choices": [')
FAST = {"max_retries": 1, "timeout": 1.5}  # a reply under a loaded machine fits in it; a hang of 5 s does not

# id: (worker protocol, worker turns, grader protocol, grader turns, grader settings, status, cause in result.json)
CASES = {
    # transient: one retry and the run ends as it would have
    "worker-429-retry-after": ("openai", [fault(429), ANSWER], "openai", [OK], {}, "satisfied", None),
    "worker-500": ("anthropic", [fault(500), ANSWER], "openai", [OK], {}, "satisfied", None),
    "worker-503": ("openai", [fault(503), ANSWER], "anthropic", [OK], {}, "satisfied", None),
    "worker-hang": ("openai", [hang(5), ANSWER], "openai", [OK], {}, "satisfied", None),
    "worker-cut-body": ("anthropic", [cut(), ANSWER], "openai", [OK], {}, "satisfied", None),
    "grader-429-retry-after": ("openai", [ANSWER], "anthropic", [fault(429), OK], {}, "satisfied", None),
    "grader-503": ("openai", [ANSWER], "openai", [fault(503), OK], {}, "satisfied", None),
    "grader-hang": ("openai", [ANSWER], "openai", [hang(5), OK], {}, "satisfied", None),
    "grader-bad-verdict-tool": ("openai", [ANSWER], "openai", [CONTRADICTS, OK], {}, "satisfied", None),
    # persistent: the worker's end the run as error, the grader's as grader_error
    "worker-429-persistent": ("openai", [fault(429)] * 2, "openai", [], {}, "error", "429"),
    "worker-500-persistent": ("anthropic", [fault(500)] * 2, "openai", [], {}, "error", "500"),
    "worker-hang-persistent": ("anthropic", [hang(5)] * 2, "openai", [], {}, "error", "timed out"),
    "worker-html-body": ("openai", [HTML], "openai", [], {}, "error", "bad gateway"),
    "worker-half-json": ("openai", [HALF_JSON], "openai", [], {}, "error", "Expecting value"),
    "grader-503-persistent": ("openai", [ANSWER], "openai", [fault(503)] * 2, {}, "grader_error", "HTTP 503"),
    "grader-429-persistent": ("openai", [ANSWER], "anthropic", [fault(429)] * 2, {}, "grader_error", "HTTP 429"),
    "grader-hang-persistent": ("openai", [ANSWER], "anthropic", [hang(5)] * 2, {}, "grader_error", "timed out"),
    "grader-cut-persistent": ("openai", [ANSWER], "openai", [cut()] * 2, {}, "grader_error", "Connection error"),
    "grader-html-body": ("openai", [ANSWER], "openai", [HTML], {}, "grader_error", "bad gateway"),
    "grader-bad-verdict-tool-persistent": (
        "openai", [ANSWER], "openai", [CONTRADICTS] * 3, {"max_model_calls": 3}, "grader_error", "run limit (3/3)"
    ),
    "grader-bad-verdict-provider": (
        "openai", [ANSWER], "anthropic", [CONTRADICTS], {"structured_output": "provider"}, "grader_error",
        "result='satisfied' but at least one criterion has passed=False",
    ),
    "grader-verdict-missing-field": (
        "openai", [ANSWER], "openai", [verdict("satisfied", ("c", True), explanation=None)],
        {"structured_output": "provider"}, "grader_error", "explanation",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fault(tmp_path, fake_keys, case):
    w_protocol, w_turns, g_protocol, g_turns, g_settings, status, cause = CASES[case]
    worker, grader = FakeServer(w_protocol, w_turns), FakeServer(g_protocol, g_turns)
    with worker, grader:
        result, run_dir = run_in_process(
            tmp_path, "grader.max_iterations=1",
            *model_overrides("worker", worker, **FAST), *model_overrides("grader", grader, **FAST, **g_settings),
        )
    record = run_json(run_dir)
    assert (record["status"], result.status) == (status, status), record["error"]
    assert worker.remaining == grader.remaining == 0  # every scripted turn, fault or reply, was asked for
    if cause is None:
        assert record["error"] is None and record["task"]["final_answer"] == "the answer"
        assert (record["task"]["iterations"], record["exit_code"]) == (1, 0)
    else:
        assert cause.lower() in record["error"]["message"].lower()
        assert record["exit_code"] == 3 and record["error"]["type"] != "UsageError"
