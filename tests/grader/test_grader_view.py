"""What the grader saw and the verdicts it could not confirm: the library's ``unverified`` flag, its
frozen checklist (seeded into a regrade), the grader's view of each pass, and the cap on a pass's
model calls, the coverage retry's included; each from a scripted run through the real loop."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest
from support.helpers import md_table, read_events, run_json, scripted_overrides, task_dir_of, verdict, write_script

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import Status, read_task_at

ONE_SENTENCE = "The answer is one sentence"
TERMS = "The answer mentions light and chlorophyll"
GOOD = "Photosynthesis is the process in which chlorophyll captures light energy to make sugar from water and carbon dioxide."
SUMMARY = ["rubric=summary", "rubric.evidence=[]"]
"""rubric=summary's hidden check (text_stats: light and chlorophyll) passes ``GOOD``."""


def _run(tmp_path, name, script, *extra):
    run_dir = tmp_path / name
    return rubric_runner.run(scripted_overrides(script, *extra), run_dir), run_dir


def _task(run_dir):
    record = read_task_at(run_dir)
    assert record is not None
    return record


def _report(run_dir) -> str:
    with contextlib.redirect_stdout(io.StringIO()):
        run_command(["report", str(run_dir)])
    return (run_dir / "report.md").read_text()


@pytest.fixture(scope="module")
def under_reported(tmp_path_factory):
    """A right answer whose second pass the grader under-reports (1 of its 2 frozen criteria, twice): the
    library downgrades its satisfied, the last pass, to max_iterations_reached, unverified."""
    tmp = tmp_path_factory.mktemp("under")
    short = verdict("satisfied", (ONE_SENTENCE, True))
    script = write_script(tmp / "s.yaml", worker=[{"content": GOOD}, {"content": GOOD}], grader=[
        verdict("needs_revision", (ONE_SENTENCE, True), (TERMS, False)), short, short])
    return _run(tmp, "run", script, *SUMMARY, "grader.max_iterations=2")


def test_an_under_reporting_grader_leaves_an_unverified_pass_in_the_record(under_reported):
    record, run_dir = under_reported
    task = _task(run_dir)
    assert task.status is Status.MAX_ITERATIONS_REACHED
    assert [(e.result, e.unverified) for e in task.evaluations] == [("needs_revision", False), ("max_iterations_reached", True)]
    assert task.checklist == [ONE_SENTENCE, TERMS]
    written = run_json(run_dir)["task"]["evaluations"]
    assert [e["unverified"] for e in written] == [False, True]
    assert task.verification.final.passed is True  # the answer was right: the rejection is the grader's failure


def test_the_report_marks_the_unverified_pass_and_the_judge_table_leaves_it_out_of_the_matrix(under_reported):
    _, run_dir = under_reported
    md = _report(run_dir)
    (run,) = md_table(md, "## Runs")
    assert run["unverified"] == "pass 2"
    (judge,) = md_table(md, "## Graders against hidden verification")
    assert judge["outside the matrix"] == "unverified 1"
    assert [judge[k] for k in ("satisfied & passed", "satisfied & failed", "rejected & passed", "rejected & failed")] == ["0"] * 4
    (group,) = md_table(md, "## By configuration")
    assert group["grading verdicts"] == "needs_revision 1, max_iterations_reached 1; unverified 1; cut view 0/2 (0.0%)"
    trail = (run_dir / "report.html").read_text()
    assert '"unverified":true' in trail


def test_the_console_says_the_verdict_was_unverified(tmp_path, capsys):
    short = verdict("satisfied", (ONE_SENTENCE, True))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}, {"content": GOOD}], grader=[
        verdict("needs_revision", (ONE_SENTENCE, True), (TERMS, False)), short, short])
    overrides = [o for o in scripted_overrides(script, *SUMMARY, "grader.max_iterations=2") if o != "run.console=false"]
    rubric_runner.run(overrides, tmp_path / "run")
    assert "   verdict: max_iterations_reached (unverified) - The grader did not account for every criterion" in capsys.readouterr().out


def test_a_regrade_grades_the_runs_checklist_name_for_name(tmp_path):
    # the regrade's grader re-splits the rubric into criteria of its own unless it is given the checklist
    # (as a real grader is told to, it then reuses each name verbatim)
    resplit = verdict("satisfied", ("Is a single sentence", True), ("Mentions light", True), ("Mentions chlorophyll", True))
    as_told = verdict("satisfied", (ONE_SENTENCE, True), (TERMS, True))
    regrade_turn = {**resplit, "when_told": {f"1. {ONE_SENTENCE}\n2. {TERMS}": as_told}}
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[as_told, regrade_turn, regrade_turn])
    record, run_dir = _run(tmp_path, "run", script, *SUMMARY)
    live = _task(run_dir)
    assert (record.status, live.checklist) == (Status.SATISFIED, [ONE_SENTENCE, TERMS])

    def regraded(*extra: str) -> list[str]:
        with contextlib.redirect_stdout(io.StringIO()):
            assert run_command(["regrade", str(run_dir), f"grader.script={script}", "run.console=false", *extra]) == 0
        newest = max((run_dir / "regrades").iterdir())
        return [c.name for c in _task(newest).evaluations[-1].criteria]

    assert regraded() == [c.name for c in live.evaluations[-1].criteria] == [ONE_SENTENCE, TERMS]
    assert regraded("grader.regrade_resplit=true") == ["Is a single sentence", "Mentions light", "Mentions chlorophyll"]


PAD = '''
from langchain_core.tools import tool


@tool
def pad(n: int) -> str:
    """n characters of padding."""
    return "y" * n
'''


@pytest.fixture
def pad_tool(tmp_path, monkeypatch):
    (tmp_path / "padding.py").write_text(PAD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "padding.pad"
    sys.modules.pop("padding", None)


def test_a_long_transcript_records_what_the_grader_was_shown(tmp_path, pad_tool):
    # 40 messages of 5,000 characters or more: the task, 19 x (a reply that calls pad, pad's result), the answer
    long_task = "Summarize photosynthesis. " + "x" * 4974
    worker = [{"content": "z" * 5000, "tool_calls": [{"name": "pad", "args": {"n": 5000}}]}] * 19 + [{"content": GOOD + " " + "w" * 5000}]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=[verdict("needs_revision", (ONE_SENTENCE, False), (TERMS, True))])
    record, run_dir = _run(tmp_path, "run", script, *SUMMARY, "grader.max_iterations=1", f"rubric.task={long_task}",
                           f"+worker.tools={{{pad_tool}: null}}")
    task = _task(run_dir)
    transcript = json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"]
    assert len(transcript) == 40
    (evaluation,) = task.evaluations
    view = evaluation.view
    # the first user message and the last 30; each of them over the 4,000-character budget is cut
    assert (view.messages, view.shown, view.dropped) == (40, 31, 9)
    assert len(view.cut) == 31 and view.cut[0].index == 0 and view.cut[1].index == 10
    assert view.cut_chars == sum(item.chars - 4000 for item in view.cut) >= 31 * 1000
    assert view.payload_chars > 31 * 4000 and len(view.payload_sha256) == 64
    assert view.is_cut and evaluation.cut_view  # its failing criterion rests on a cut view
    warning = next(e for e in read_events(run_dir) if e["event"] == "verdict_on_cut_view")
    assert (warning["dropped"], warning["cut"]) == (9, 31)
    assert record.status is Status.MAX_ITERATIONS_REACHED
    md = _report(run_dir)
    (group,) = md_table(md, "## By configuration")
    assert group["grading verdicts"] == "max_iterations_reached 1; cut view 1/1 (100.0%)"
    # the answer passed its hidden check: rejected on a cut view, a false rejection there
    (views,) = md_table(md, "### Verdicts on cut and uncut views")
    assert views["false rejection, cut view"].startswith("1/1 (100.0%")
    assert views["false rejection, uncut view"] == views["false satisfied, cut view"] == "-"


def test_on_cut_view_fail_ends_a_task_rejected_on_a_cut_view_unsupported(tmp_path, pad_tool):
    worker = [{"content": "z" * 5000, "tool_calls": [{"name": "pad", "args": {"n": 5000}}]}, {"content": GOOD}]
    script = write_script(tmp_path / "s.yaml", worker=worker, grader=[verdict("needs_revision", (ONE_SENTENCE, False), (TERMS, True))])
    record, run_dir = _run(tmp_path, "run", script, *SUMMARY, "grader.max_iterations=1", "grader.on_cut_view=fail",
                           f"+worker.tools={{{pad_tool}: null}}")
    assert _task(run_dir).evaluations[0].view.cut[0].cut > 0
    assert record.status is Status.UNSUPPORTED


def test_an_uncut_view_says_so(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[verdict("satisfied", (ONE_SENTENCE, True), (TERMS, True))])
    _, run_dir = _run(tmp_path, "run", script, *SUMMARY)
    view = _task(run_dir).evaluations[0].view
    assert (view.messages, view.shown, view.dropped, view.cut, view.is_cut) == (2, 2, 0, [], False)


def test_max_model_calls_caps_a_pass_with_its_coverage_retry(tmp_path):
    # a grader that verifies nothing: each pass's first answer has no criteria, so the library retries it
    empty = verdict("satisfied")
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}, {"content": GOOD}], grader=[empty] * 4)
    record, run_dir = _run(tmp_path, "run", script, *SUMMARY, "grader.max_iterations=2", "grader.max_model_calls=1")
    task = _task(run_dir)
    assert [(e.result, e.unverified, e.grader_calls) for e in task.evaluations] == [
        ("needs_revision", True, 1), ("max_iterations_reached", True, 1)]
    assert task.usage["grader"].calls == 2  # one a pass: the retries were refused by the cap
    starts = [e for e in read_events(run_dir) if e["event"] == "model_call_start" and e.get("agent") == "grader"]
    assert len(starts) == 2


def test_without_a_cap_the_coverage_retry_is_a_call_of_the_same_pass(tmp_path):
    empty = verdict("satisfied")
    script = write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}], grader=[empty, empty])
    _, run_dir = _run(tmp_path, "run", script, *SUMMARY, "grader.max_iterations=1")
    (evaluation,) = _task(run_dir).evaluations
    assert (evaluation.result, evaluation.unverified, evaluation.grader_calls) == ("max_iterations_reached", True, 2)
