"""What a user of a local model sees: the pre-flight check of a server, errors that name the role, model,
address and fix, verdicts that must cite their evidence, coverage flags, and the console trail."""

from __future__ import annotations

import inspect
import subprocess
import sys
import uuid

import code_task_solutions
import pytest
from support.helpers import (
    SCRIPTED_EVIDENCE,
    on_terminal,
    only_task,
    read_events,
    run_in_process,
    run_json,
    run_scripted,
    scripted_overrides,
    verdict,
    write_script,
)
from support.wire import FakeServer, fault, model_overrides, text
from support.wire import verdict as wire_verdict

import rubric_runner
from rubric_runner.grader.evidence import coverage

CODE = ("All tests pass in run_test_suite", "The function is named find_duplicates and accepts a single list argument")
HAIKU = ("The poem has three lines", "Lines follow a 5-7-5 syllable pattern", "The theme is spring")
GOOD = inspect.getsource(code_task_solutions.find_duplicates)
TESTS = {"tool_calls": [{"name": "run_test_suite", "args": {"code": GOOD}}]}
SYLLABLES = {"tool_calls": [{"name": "count_syllables", "args": {"text": "a\nb\nc"}}]}


@pytest.mark.parametrize(("role", "protocol"), [("worker", "openai"), ("grader", "anthropic")])
def test_preflight_names_the_role_and_the_address_nothing_answers_at(tmp_path, fake_keys, role, protocol):
    other = "grader" if role == "worker" else "worker"
    with FakeServer(protocol, refuse=True) as gone, FakeServer("openai") as up:
        result, _ = run_in_process(tmp_path, *model_overrides(role, gone), *model_overrides(other, up))
    assert (result.status, result.exit_code, result.error.key) == ("error", 2, f"{role}.base_url")
    assert f"nothing answers at {gone.base_url}" in result.error.message
    assert "start the server or set" in result.error.message and up.requests == []


def test_preflight_names_the_models_a_server_lists(tmp_path, fake_keys):
    with FakeServer("openai") as server:
        result, _ = run_in_process(tmp_path, "worker.model=openai:qwen2.5-coder", f"worker.base_url={server.base_url}",
                                   *model_overrides("grader", server))
    assert (result.exit_code, result.error.key) == (2, "worker.model")
    assert f"the server at {server.base_url} does not serve 'qwen2.5-coder' (it lists local-model)" in result.error.message
    assert "set worker.model=openai:local-model" in result.error.message


def test_worker_provider_error_names_role_model_and_address(tmp_path, fake_keys):
    worker = FakeServer("openai", [fault(500, "model crashed: out of memory", retry_after=None)])
    with worker, FakeServer("openai") as grader:
        result, _ = run_in_process(tmp_path, *model_overrides("worker", worker, max_retries=0), *model_overrides("grader", grader))
    assert result.status == "error"
    message = result.error.message
    assert message.startswith(f"worker openai:local-model at {worker.base_url}: HTTP 500: ")
    assert "model crashed: out of memory" in message and "(fix: see the server's log" in message


def test_satisfied_without_the_required_tool_is_sent_back_then_flagged(tmp_path):
    ok = verdict("satisfied", *((c, True) for c in CODE))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[ok, ok])
    result, run_dir = run_scripted(tmp_path, script, "rubric=code")
    assert (result.status, result.exit_code, only_task(result).iterations) == ("unsupported", 1, 1)
    record = run_json(run_dir)
    assert record["task"]["evaluations"][-1]["result"] == "satisfied"
    assert record["task"]["evaluations"][-1]["unsupported"] == {"missing": ["run_test_suite"]}
    events = [e["event"] for e in read_events(run_dir)]
    assert events.index("verdict_sent_back") < events.index("verdict_unsupported")


def test_sent_back_verdict_that_then_calls_the_tool_is_accepted(tmp_path):
    ok = verdict("satisfied", *((c, True) for c in CODE))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[ok, TESTS, ok])
    result, run_dir = run_scripted(tmp_path, script, "rubric=code")
    assert result.status == "satisfied" and only_task(result).evaluations[-1].unsupported is None
    tool_ends = [e for e in read_events(run_dir) if e["event"] == "tool_call_end" and e["agent"] == "grader"]
    assert [e["tool"] for e in tool_ends] == ["run_test_suite"] and '"ok": true' in tool_ends[0]["output"]


@pytest.mark.parametrize(
    ("extra", "first_criterion"),
    [
        (["rubric.evidence=[count_syllables]"], HAIKU[0]),  # the rubric requires it
        ([], "Syllables checked with count_syllables"),  # a passed criterion names it
    ],
)
def test_other_ways_a_verdict_needs_evidence(tmp_path, extra, first_criterion):
    ok = verdict("satisfied", (first_criterion, True), *((c, True) for c in HAIKU[1:]))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a\nb\nc"}], grader=[ok, SYLLABLES, ok])
    result, _ = run_scripted(tmp_path, script, *extra)
    assert result.status == "satisfied"
    script = write_script(tmp_path / "t.yaml", worker=[{"content": "a\nb\nc"}], grader=[ok, ok])
    result, _ = run_scripted(tmp_path / "again", script, *extra)
    assert result.status == "unsupported" and only_task(result).evaluations[-1].unsupported.missing == ["count_syllables"]


def test_a_rubric_line_that_names_a_tool_requires_it_whatever_the_criteria_say(tmp_path):
    ok = verdict("satisfied", ("All tests pass", True), (CODE[1], True))  # the criterion leaves the tool out
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[ok, ok])
    result, _ = run_scripted(tmp_path, script, "rubric=code")
    assert result.status == "unsupported" and only_task(result).evaluations[-1].unsupported.missing == ["run_test_suite"]


def test_a_needs_revision_verdict_needs_no_evidence_for_its_failures(tmp_path):
    failing = verdict("needs_revision", (CODE[0], False), (CODE[1], True))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[failing])
    result, run_dir = run_scripted(tmp_path, script, "rubric=code", "grader.max_iterations=1")
    assert result.status == "max_iterations_reached" and only_task(result).evaluations[-1].unsupported is None
    assert not any(e["event"] == "verdict_sent_back" for e in read_events(run_dir))


def test_coverage_is_flagged_and_can_count_as_not_satisfied(tmp_path, capsys):
    partial = verdict("satisfied", (HAIKU[0], True), ("Uses vivid imagery", True))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a\nb\nc"}], grader=[partial])
    overrides = [o for o in scripted_overrides(script) if o != "run.console=false"]

    
    result = rubric_runner.run(overrides, tmp_path / "run")
    assert result.status == "satisfied"
    flag = only_task(result).evaluations[-1].coverage.model_dump()
    assert flag == {"lines": 3, "criteria": 2, "uncovered": list(HAIKU[1:]), "other": ["Uses vivid imagery"]}
    out = capsys.readouterr().out
    assert "! coverage: 2 criteria for 3 rubric lines, not covered: Lines follow a 5-7-5 syllable pattern; The theme is spring" in out
    result, _ = run_scripted(tmp_path / "strict", script, "grader.strict_coverage=true")
    assert (result.status, result.exit_code) == ("unsupported", 1)


def test_coverage_matches_criteria_to_lines_by_their_words():
    rubric = "- The poem has three lines\n- Lines follow a 5-7-5 syllable pattern\n\n- The theme is spring"
    reworded = [{"name": "Poem has exactly three lines"}, {"name": "Syllable pattern is 5-7-5"}, {"name": "Spring is the theme"}]
    assert coverage(rubric, reworded) is None
    assert coverage(rubric, reworded[:2])["uncovered"] == ["The theme is spring"]
    assert coverage("- All tests pass in run_test_suite", [{"name": "run_test_suite passes"}, {"name": "Code is fast"}]) == {
        "lines": 1, "criteria": 2, "uncovered": [], "other": ["Code is fast"]}


def test_console_labels_the_scripted_role_only(tmp_path, fake_keys, capsys):
    import rubric_runner

    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a\nb\nc"}], grader=[])
    worker = FakeServer("openai", [text("a\nb\nc")])
    ok = wire_verdict("satisfied", *((c, True) for c in HAIKU))
    grader = FakeServer("openai", [ok])
    with worker, grader:
        record = rubric_runner.run([*model_overrides("worker", worker), "grader=scripted", f"grader.script={script}"],
                                   tmp_path / "a")
        assert record.exit_code == 3, record.error  # grader_error: the script has no grader turn left
        header = capsys.readouterr().out.splitlines()[0]
        assert header.startswith("rubric_runner: worker=openai:local-model grader=scripted:demo (scripted: replays a script")
        record = rubric_runner.run(["worker=scripted", f"worker.script={script}", *model_overrides("grader", grader),
                                    SCRIPTED_EVIDENCE], tmp_path / "b")
    assert record.exit_code == 0, record.error
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rubric_runner: worker=scripted:demo (scripted: replays a script, no provider is called) grader=openai:local-model rubric=haiku")
    assert "grader.structured_output=auto -> tool (probe: tool works)" in lines
    assert "-- grading pass 1" in lines and "status: satisfied after 1 grading pass(es)" in lines


def test_live_line_while_a_model_call_runs(tmp_path):
    ok = verdict("satisfied", *((c, True) for c in HAIKU))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a\nb\nc", "latency": 2.6}], grader=[SYLLABLES, ok])
    overrides = [o for o in scripted_overrides(script) if o != "run.console=false"]
    code, shown = on_terminal([*overrides, f"hydra.run.dir={tmp_path / 'tty'}"], cwd=tmp_path)
    shown = shown.decode()
    assert code == 0
    assert "worker model call 1s" in shown and "worker model call 2s" in shown
    assert "grader model call" not in shown  # the grader's calls took no second
    assert shown.endswith("\r\x1b[K") or "\r\x1b[K" in shown  # the line is cleared when the call returns
    piped = subprocess.run([sys.executable, "-m", "rubric_runner", *overrides, f"hydra.run.dir={tmp_path / 'pipe'}"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and "model call" not in piped.stderr + piped.stdout


def test_a_task_takes_its_unfinished_calls_off_the_live_line():
    """A call a limit refused never ends (no callback says so): when its task ends, the recorder forgets it."""
    import structlog

    from rubric_runner.observe.console import Console, LiveLine
    from rubric_runner.observe.recorder import Recorder
    from rubric_runner.records import RunRecord

    console = Console()
    console.live = LiveLine()  # as on a terminal
    recorder = Recorder(structlog.get_logger(), RunRecord(), console, 200)
    refused, returned = uuid.uuid4(), uuid.uuid4()
    for run_id in (refused, returned):
        recorder.on_chat_model_start({}, [[]], run_id=run_id)
    recorder.on_llm_error(RuntimeError("x"), run_id=returned)
    assert list(console.live._calls) == [refused]
    recorder.forget_calls()
    assert console.live._calls == {}


def test_regrade_checks_evidence_too(tmp_path, capsys):
    from rubric_runner.cli import run_command

    ok = verdict("satisfied", *((c, True) for c in CODE))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[TESTS, ok])
    run_dir = tmp_path / "run"
    assert rubric_runner.run(scripted_overrides(script, "rubric=code"), run_dir).exit_code == 0
    stubborn = write_script(tmp_path / "stubborn.yaml", worker=[], grader=[ok, ok])
    capsys.readouterr()
    assert run_command(["regrade", str(run_dir), f"grader.script={stubborn}"]) == 1
    out = capsys.readouterr().out
    assert "verdict sent back: it rests on run_test_suite" in out and "! unsupported" in out
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    record = run_json(regrade_dir)
    assert record["status"] == "unsupported" and record["task"]["evaluations"][0]["unsupported"] == {"missing": ["run_test_suite"]}
    assert record["header"]["grader"]["strategy"] == "tool"


def test_max_tokens_reaches_a_server_that_knows_only_max_tokens(tmp_path, fake_keys):
    worker = FakeServer("openai", [text("a\nb\nc")])
    grader = FakeServer("openai", [wire_verdict("satisfied", *((c, True) for c in HAIKU))])
    with worker, grader:
        result, _ = run_in_process(tmp_path, *model_overrides("worker", worker, max_tokens=77),
                                   *model_overrides("grader", grader, max_tokens=88))
    assert result.status == "satisfied", result.error
    sent = [(r.json.get("max_tokens"), r.json.get("max_completion_tokens")) for r in worker.requests + grader.requests]
    assert sent == [(77, 77), (88, 88)]
