"""Hidden verification: verify checks run on the first and the final answer, never seen by a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import only_task, read_events, run_json, run_scripted, verdict, write_script

from rubric_runner.models.scripted import ScriptedChatModel
from rubric_runner.paths import DATA_DIR

SENTINEL = "HIDDEN_SENTINEL_7f3a"
WRONG = "def dedupe(items):\n    return []\n"
RIGHT = "def dedupe(items):\n    return list(dict.fromkeys(items))\n"
HIDDEN_TEST = f"def check(candidate):\n    assert candidate([3, 1, 3]) == [3, 1], '{SENTINEL}'\n"


def _dataset(path: Path, *tasks: dict) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def _task(task_id: str, verify: dict) -> dict:
    cases = [{"name": "visible", "args": [[1, 1]], "expected": [1]}]
    return {"id": task_id, "task": "Write dedupe(items).", "tools": {"run_test_suite": {"function": "dedupe", "cases": cases}},
            "verify": verify}


def _record(run_dir: Path, task_id: str) -> dict:
    return run_json(run_dir / "tasks" / f"{task_id}-r0")


def test_verification_is_never_seen_by_the_worker_or_the_grader(tmp_path, monkeypatch):
    received: list[str] = []
    reply = ScriptedChatModel._reply

    def recording(self, messages, index, turn):
        received.extend(f"{message.content} {getattr(message, 'tool_calls', '')}" for message in messages)
        return reply(self, messages, index, turn)

    monkeypatch.setattr(ScriptedChatModel, "_reply", recording)
    revise = verdict("needs_revision", ("c", False))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": WRONG}, {"content": RIGHT}], grader=[
        {"tool_calls": [{"name": "run_test_suite", "args": {"code": WRONG}}]}, revise,
        {"tool_calls": [{"name": "run_test_suite", "args": {"code": RIGHT}}]}, verdict("satisfied", ("c", True)),
    ])
    check = {"run_check": {"test": HIDDEN_TEST, "entry_point": "dedupe"}}
    data = _dataset(tmp_path / "tasks.jsonl", _task("dedupe", check))
    record, run_dir = run_scripted(tmp_path, script, f"rubric.dataset={data}", "rubric=code_tasks", "run.repeats=2")

    assert record.status == "satisfied"
    task = _record(run_dir, "dedupe")
    assert task["verification"]["first"]["outcome"] == "failed"
    assert SENTINEL in task["verification"]["first"]["checks"][0]["details"]["failures"][0]
    assert task["verification"]["final"]["outcome"] == "passed"
    assert task["first_answer"] == WRONG and task["final_answer"] == RIGHT
    # the hidden suite and its output reached no model and no transcript; the run's tool calls are the grader's own
    assert received and not any(SENTINEL in text or "run_check" in text for text in received)
    for transcript in run_dir.glob("tasks/*/transcript.json"):
        assert SENTINEL not in transcript.read_text() and "run_check" not in transcript.read_text()
    events = read_events(run_dir)
    assert {e["tool"] for e in events if e["event"].startswith("tool_call")} == {"run_test_suite"}
    assert all(SENTINEL not in e["output"] for e in events if e["event"] == "tool_call_end")
    assert record.header.grader.tools == ["run_test_suite"] and record.header.worker.tools == []
    verifications = [(e["repeat"], e["answer"], e["outcome"]) for e in events if e["event"] == "verification"]
    assert sorted(verifications) == [(0, "final", "passed"), (0, "first", "failed"), (1, "final", "passed"), (1, "first", "failed")]


def test_a_check_that_cannot_run_is_unverifiable_never_passed(tmp_path):
    suite = tmp_path / "solution.py"  # a pytest suite named like the module it imports: run_test_suite raises
    suite.write_text("def test_x():\n    pass\n")
    script = write_script(tmp_path / "s.yaml", worker=[{"content": RIGHT}], grader=[verdict("satisfied", ("c", True))])
    data = _dataset(
        tmp_path / "tasks.jsonl",
        _task("raises", {"run_test_suite": {"suite": str(suite)}}),
        _task("no_ok", {"count_syllables": {}}),  # without a pattern count_syllables decides nothing
        _task("one_of_two", {"run_test_suite": {"suite": str(suite)}, "run_check": {"test": HIDDEN_TEST, "entry_point": "dedupe"}}),
    )
    record, run_dir = run_scripted(tmp_path, script, f"rubric.dataset={data}", "rubric=code_tasks")

    raises = _record(run_dir, "raises")["verification"]["final"]
    assert (raises["outcome"], raises["passed"]) == ("unverifiable", None)
    assert raises["checks"][0]["error"].startswith("ValueError: the pytest file solution.py cannot share its name")
    no_ok = _record(run_dir, "no_ok")["verification"]["final"]
    assert (no_ok["outcome"], no_ok["passed"]) == ("unverifiable", None)
    assert "returned no boolean 'ok'" in no_ok["checks"][0]["error"] and no_ok["checks"][0]["details"]["line_count"] == 2
    both = _record(run_dir, "one_of_two")["verification"]["final"]
    assert [c["outcome"] for c in both["checks"]] == ["unverifiable", "passed"] and both["passed"] is None
    assert record.aggregate.verification == {"first": {"passed": 0, "failed": 0, "unverifiable": 3},
                                             "final": {"passed": 0, "failed": 0, "unverifiable": 3}}
    assert {row.verified_final for row in record.tasks} == {None}


def test_no_answer_is_unverifiable(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": ""}], grader=[verdict("failed", ("c", False))])
    record, _ = run_scripted(tmp_path, script, "rubric=code")
    assert only_task(record).verification.final.outcome == "unverifiable" and only_task(record).verification.final.error == "the worker gave no answer"


def test_first_attempt_is_the_answer_before_the_first_revision_request(tmp_path):
    revise = verdict("needs_revision", ("c", False))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "one"}, {"content": "two"}, {"content": "three"}],
                          grader=[revise, revise, verdict("satisfied", ("c", True))])
    record, _ = run_scripted(tmp_path, script, "rubric=summary")
    assert (only_task(record).first_answer, only_task(record).final_answer) == ("one", "three")
    assert [c.details["missing_terms"] for c in (only_task(record).verification.first.checks[0], only_task(record).verification.final.checks[0])] \
        == [["light", "chlorophyll"], ["light", "chlorophyll"]]


def test_code_demo_verifies_with_its_hidden_suite(tmp_path):
    record, run_dir = run_scripted(tmp_path, DATA_DIR / "scripts" / "code.yaml", "rubric=code")
    first, final = only_task(record).verification.first, only_task(record).verification.final
    assert (record.status, first.outcome, final.outcome) == ("satisfied", "failed", "passed")
    assert [f.split(":")[0] for f in first.checks[0].details["failures"]] == ["hidden_nested_lists", "hidden_dicts_and_numbers"]
    assert len(final.checks[0].details["passed"]) == 5
    saved = run_json(run_dir)
    assert saved["task"]["verification"]["final"]["passed"] is True and [row["task_id"] for row in saved["tasks"]] == [None]


@pytest.mark.parametrize(
    ("override", "key", "problem"),
    [
        ("+rubric.verify.word_count={}", "rubric.verify.word_count", "unknown tool 'word_count'"),
        ("+rubric.verify.run_check={}", "rubric.verify.run_check.test", "required setting is missing"),
        ("rubric.verify.run_test_suite.suite=/no/such.yaml", "rubric.verify.run_test_suite.suite", "Path does not point to a file"),
        ("+rubric.verify.run_test_suite.speed=9", "rubric.verify.run_test_suite.speed", "tool 'run_test_suite' has no setting"),
        ("rubric.verify.run_test_suite=5", "rubric.verify.run_test_suite", "settings must be a mapping or null"),
    ],
)
def test_bad_verify_checks_fail_before_any_model_call(tmp_path, override, key, problem):
    script = write_script(tmp_path / "s.yaml", worker=[{"raise": "no model may be called"}], grader=[])
    record, run_dir = run_scripted(tmp_path, script, "rubric=code", override)
    assert (record.status, record.exit_code, record.error.key) == ("error", 2, key)
    assert record.error.message.startswith(f"{key}: {problem}")
    assert not [e for e in read_events(run_dir) if e["event"] == "model_call_start"]


@pytest.mark.parametrize("selection", ["[]", "[b,c]", "[2:]"])
def test_a_task_with_a_bad_check_names_its_line(tmp_path, selection):
    script = write_script(tmp_path / "s.yaml", worker=[{"raise": "no model may be called"}], grader=[])
    data = _dataset(tmp_path / "tasks.jsonl", _task("a", {}), _task("b", {}), _task("c", {"run_check": {"entry_point": "dedupe"}}))
    record, _ = run_scripted(tmp_path, script, f"rubric.dataset={data}", "rubric=code_tasks", f"rubric.tasks={selection}")
    assert (record.exit_code, record.error.key) == (2, "rubric.dataset[2].verify.run_check.test")


def test_the_rubric_s_own_bad_setting_is_named_by_its_own_key(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"raise": "no model may be called"}], grader=[])
    data = _dataset(tmp_path / "tasks.jsonl", _task("a", {}))
    record, _ = run_scripted(tmp_path, script, f"rubric.dataset={data}", "rubric=code_tasks", "+rubric.verify.run_check.entry_point=1x")
    assert (record.exit_code, record.error.key) == (2, "rubric.verify.run_check.entry_point")


def test_the_first_answer_of_a_follow_up_turn_is_its_own():
    from langchain_core.messages import AIMessage, HumanMessage

    from rubric_runner.compat.deepagents import GRADER_SOURCE
    from rubric_runner.loop.answers import first_answer

    def revise():
        return HumanMessage("revise", name=GRADER_SOURCE)

    turn_one = [HumanMessage("task"), AIMessage("one"), revise(), AIMessage("one, revised")]
    assert first_answer(turn_one) == "one"
    turn_two = [*turn_one, HumanMessage("a follow-up"), AIMessage("two"), revise(), AIMessage("two, revised")]
    assert first_answer(turn_two) == "two"
