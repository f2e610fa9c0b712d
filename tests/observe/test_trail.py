"""Nothing a model does is invisible: every tool call, refused ones too, and each attempt show on the trail."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import ToolMessage
from support.helpers import (
    SCRIPTED_EVIDENCE,
    only_task,
    read_events,
    run_cli,
    run_scripted,
    task_dir_of,
    verdict,
    write_script,
)

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.models.scripted import ScriptedChatModel
from rubric_runner.observe.console import EXCERPT_LINES, EXCERPT_WIDTH

OK = verdict("satisfied", ("c", True))
TRAIL = ("worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE)


@pytest.fixture
def seen_by_models(monkeypatch):
    """The messages each scripted model call was given, in order: what the models were told."""
    calls: list[list] = []
    reply = ScriptedChatModel._reply

    def recording(self, messages, index, turn):
        calls.append(list(messages))
        return reply(self, messages, index, turn)

    monkeypatch.setattr(ScriptedChatModel, "_reply", recording)
    return calls


def _told(calls: list[list], tool: str) -> list[str]:
    return [m.content for messages in calls for m in messages if isinstance(m, ToolMessage) and m.name == tool]


def test_a_grader_call_to_a_removed_tool_is_refused_recorded_and_shown(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_cli(*TRAIL, "rubric=code", "~grader.tools.run_test_suite", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    refused = [e for e in read_events(run_dir) if e["event"] == "tool_call_refused"]
    assert [(e["agent"], e["tool"], e["level"]) for e in refused] == [("grader", "run_test_suite", "warning")] * 2
    assert "seen = set()" in refused[0]["input"] and "seen = []" in refused[1]["input"]
    told = "Error: run_test_suite is not a valid tool, try one of []."
    assert [e["told"] for e in refused] == [told, told]
    assert proc.stdout.count(f"   grader called run_test_suite -> refused: {told}\n") == 2
    assert not any(e["event"] == "tool_call_start" for e in read_events(run_dir))  # nothing ran


def test_a_tool_call_the_tool_refuses_is_recorded_as_an_error(tmp_path):
    """Arguments a tool rejects: the call starts and ends in an error (``ToolError``: the tool node answered
    the model with it), with what the model was told."""
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "answer"}],
        grader=[{"tool_calls": [{"name": "count_syllables", "args": {"words": "answer"}}]}, OK, OK],
    )
    _, run_dir = run_scripted(tmp_path, script)
    calls = [e for e in read_events(run_dir) if e["event"].startswith("tool_call")]
    assert [(e["event"], e["agent"], e["tool"]) for e in calls] == [
        ("tool_call_start", "grader", "count_syllables"), ("tool_call_error", "grader", "count_syllables")]
    assert calls[0]["input"] == "{'words': 'answer'}"
    assert calls[1]["error_type"] == "ToolError" and "text" in calls[1]["error"]


def test_the_refusal_is_what_the_grader_reads_next(tmp_path, seen_by_models):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "answer"}],
        grader=[{"tool_calls": [{"name": "count_syllables", "args": {"text": "answer"}}]}, OK],
    )
    result, run_dir = run_scripted(tmp_path, script, "rubric=code", "~grader.tools.run_test_suite")
    assert result.status == "satisfied"
    (event,) = [e for e in read_events(run_dir) if e["event"] == "tool_call_refused"]
    assert _told(seen_by_models, "count_syllables") == [event["told"]]
    assert event["input"] == "{'text': 'answer'}"


def test_a_worker_call_to_a_tool_it_was_not_given_is_refused_and_recorded(tmp_path, seen_by_models, capsys):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"tool_calls": [{"name": "run_test_suite", "args": {"code": "x = 1"}}]}, {"content": "done"}],
        grader=[OK],
    )
    result, run_dir = run_scripted(tmp_path, script, "run.console=true")
    assert result.status == "satisfied"
    (event,) = [e for e in read_events(run_dir) if e["event"] == "tool_call_refused"]
    assert (event["agent"], event["tool"], event["input"]) == ("worker", "run_test_suite", "{'code': 'x = 1'}")
    assert event["told"].startswith("Error: run_test_suite is not a valid tool, try one of [ls, read_file")
    assert _told(seen_by_models, "run_test_suite") == [event["told"]]
    assert f"   worker called run_test_suite -> refused: {event['told']}\n" in capsys.readouterr().out


def test_a_verdict_that_breaks_its_schema_is_refused_recorded_and_shown(tmp_path, seen_by_models, capsys):
    contradicting = verdict("satisfied", ("c", True))
    contradicting["tool_calls"][0]["args"]["criteria"][0] = {"name": "c", "passed": False, "gap": "g"}
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "answer"}], grader=[contradicting, OK])
    result, run_dir = run_scripted(tmp_path, script, "run.console=true", "run.preview_chars=5000")
    assert (result.status, only_task(result).iterations) == ("satisfied", 1)
    (event,) = [e for e in read_events(run_dir) if e["event"] == "tool_call_refused"]
    assert (event["agent"], event["tool"]) == ("grader", "GraderResponse") and "'passed': False" in event["input"]
    assert "result='satisfied' but at least one criterion has passed=False" in event["told"]
    assert _told(seen_by_models, "GraderResponse") == [event["told"]]
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "called GraderResponse" in line]
    assert line.startswith("   grader called GraderResponse -> refused: Error: Failed to parse structured output")
    assert "result='satisfied' but at least one criterion" in line and len(line) < 300


def test_the_trail_shows_a_bounded_excerpt_of_each_attempt(tmp_path, capsys):
    long_line = "word " * 60
    first = "\n".join(f"{i}: {long_line}" for i in range(40))
    second = "short\x1b[31m answer\tdone"
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": first}, {"content": second}],
        grader=[verdict("needs_revision", ("c", False)), OK],
    )
    result, run_dir = run_scripted(tmp_path, script, "run.console=true")
    assert result.status == "satisfied"
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines.index(f"   worker answered (40 lines, {len(first)} chars):")
    shown = lines[start + 1 : start + 2 + EXCERPT_LINES]
    assert shown[:EXCERPT_LINES] == [f"   | {i}: {long_line}"[: 5 + EXCERPT_WIDTH] + "..." for i in range(EXCERPT_LINES)]
    assert shown[-1] == f"   | ... (+{40 - EXCERPT_LINES} lines)"
    assert lines[start + 2 + EXCERPT_LINES] == "-- grading pass 1"
    # the second attempt, before the second grading pass; no control character reaches the terminal
    assert f"   worker answered (1 line, {len(second)} chars):\n   | short?[31m answer done\n-- grading pass 2\n" in out
    # the first answer (12,000 characters) is cut in the grader's view, and its rejection says so in one line
    assert "   ! cut view: the failing criteria rest on a transcript the grader saw in part (2 of 2 messages shown, 1 cut by" in out
    assert "\x1b" not in out and len(out.splitlines()) < 21
    messages = json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"]
    assert [m["data"]["content"] for m in messages if m["type"] == "ai"] == [first, second]  # the full text


def test_a_regrade_records_and_shows_a_refused_call_too(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert rubric_runner.run([*TRAIL, "rubric=code"], run_dir).exit_code == 0
    capsys.readouterr()
    assert run_command(["regrade", str(run_dir), "~grader.tools.run_test_suite"]) == 0
    out = capsys.readouterr().out
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    (event,) = [e for e in read_events(regrade_dir) if e["event"] == "tool_call_refused"]
    assert (event["agent"], event["tool"]) == ("grader", "run_test_suite") and "seen = []" in event["input"]
    assert f"   grader called run_test_suite -> refused: {event['told']}\n" in out
