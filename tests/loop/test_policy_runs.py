"""Loop policies, replayed and run for real (scripted worker and grader, the real test runner as the hidden
check): the replay's prediction is what a real run with that policy does."""

from __future__ import annotations

import json

import pytest
from support.helpers import (
    md_table,
    only_task,
    run_cli,
    run_json,
    run_scripted,
    scripted_overrides,
    task_dir_of,
    verdict,
    write_script,
)

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import RunRecord
from rubric_runner.report.trails import trail

GOOD = "def find_duplicates(lst):\n    seen, out = [], []\n    for x in lst:\n        if x in seen and x not in out:\n            out.append(x)\n        seen.append(x)\n    return out\n"
BROKEN = "def find_duplicates(lst):\n    return sorted(set(x for x in lst if lst.count(x) > 1))\n"
TESTS, NAME, STYLE = "All tests pass", "The function is named find_duplicates", "The code is commented"
CODE = ("rubric=code", "sandbox.isolation=none")


def replayed(run_dir, capsys, *extra) -> dict[str, dict]:
    """``rubric-runner policies RUN_DIR --json``'s rows, by policy."""
    capsys.readouterr()
    assert run_command(["policies", str(run_dir), "--json", *extra]) == 0
    return {row["policy"]: row for row in json.loads(capsys.readouterr().out)["policies"]}


def record(run_dir) -> dict:
    return run_json(run_dir)["task"]


@pytest.fixture
def breaking(tmp_path):
    """A worker whose revision breaks its passing answer; the grader sees it lose a criterion."""
    return write_script(tmp_path / "s.yaml", worker=[{"content": GOOD}, {"content": BROKEN}],
                        grader=[verdict("needs_revision", (TESTS, True), (NAME, True), (STYLE, False)),
                                verdict("needs_revision", (TESTS, False), (NAME, True), (STYLE, False))])


def test_best_would_have_passed_where_last_failed_and_a_real_best_run_returns_the_passing_attempt(tmp_path, capsys, breaking):
    _, last_dir = run_scripted(tmp_path / "last", breaking, *CODE, "grader.max_iterations=2")
    last = record(last_dir)
    assert [a["verification"]["passed"] for a in last["verified_attempts"]] == [True, False]
    assert last["verification"]["final"]["passed"] is False and "returned" not in last
    rows = replayed(last_dir, capsys)
    assert rows["as run (last)"]["passed"] == 0 and rows["best"]["passed"] == 1 and rows["best"]["known"] == 1
    found = rubric_runner.policies(last_dir)
    assert found is not None and (found.runs, found.on) == (1, "hidden checks")
    assert json.loads(json.dumps([r.as_dict() for r in found.replayed])) == list(rows.values())  # the command prints the API's
    assert rows["best"]["versus_as_run"]["policy_only"] == 1 and rows["best"]["tokens"] == rows["as run (last)"]["tokens"]

    result, best_dir = run_scripted(tmp_path / "best", breaking, *CODE, "grader.max_iterations=2", "loop.returns=best")
    best = record(best_dir)
    assert result.status == "max_iterations_reached" and best["iterations"] == 2
    assert best["final_answer"] == GOOD and best["verification"]["final"]["passed"] is True
    assert best["attempts"] == [GOOD, BROKEN]  # the restored copy is the final answer, not a third attempt
    assert best["returned"] == {"attempt": 1, "of": 2, "returns": "best", "stopped": False,
                                "why": "loop.returns=best: attempt 1 of 2 returned, 2 criteria passed against the last's 1"}
    events = [json.loads(line) for line in (best_dir / "events.jsonl").read_text().splitlines()]
    assert [e["attempt"] for e in events if e["event"] == "loop_returned"] == [1]
    assert replayed(best_dir, capsys)["as run (best)"]["passed"] == 1  # its own replay reads its returned answer
    run = RunRecord.model_validate_json((best_dir / "result.json").read_text())
    assert trail(run.header, only_task(best_dir))["returned"] == best["returned"]["why"]  # report.html's trail says it
    transcript = json.loads((task_dir_of(best_dir) / "transcript.json").read_text())["messages"]
    assert transcript[-1]["data"]["name"] == "loop_returned" and transcript[-1]["data"]["content"] == GOOD


def test_stop_after_no_gain_saves_the_spend_the_replay_predicts(tmp_path, capsys):
    flat = verdict("needs_revision", (TESTS, False), (NAME, True))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": BROKEN}, {"content": BROKEN + "\n"}, {"content": BROKEN + "\n\n"}],
                          grader=[flat, flat, flat])
    _, full_dir = run_scripted(tmp_path / "full", script, *CODE, "grader.max_iterations=3")
    assert record(full_dir)["iterations"] == 3
    predicted = replayed(full_dir, capsys)["stop=no_gain:1"]
    assert predicted["tokens"] < predicted["as_run_tokens"] and predicted["token_change"] < -0.2

    result, stop_dir = run_scripted(tmp_path / "stop", script, *CODE, "grader.max_iterations=3", "loop.stop=no_gain")
    stopped = record(stop_dir)
    assert result.status == "max_iterations_reached" and stopped["iterations"] == 2
    assert stopped["evaluations"][-1]["result"] == "needs_revision"  # the grader's verdict stands
    assert stopped["returned"]["stopped"] is True and "no_gain ended the loop after pass 2" in stopped["returned"]["why"]
    spent = sum(usage["total_tokens"] for usage in stopped["usage"].values())
    assert abs(spent - predicted["tokens"]) <= 0.01 * predicted["tokens"], (spent, predicted["tokens"])
    past = replayed(stop_dir, capsys)["last"]  # past its own stop: never guessed
    assert (past["replayed"], past["not_replayable"], past["rate"], past["tokens"], past["usd"]) == (0, 1, None, None, None)


def test_a_bad_stop_rule_is_one_error_line(tmp_path, capsys, breaking):
    result, _ = run_scripted(tmp_path, breaking, *CODE, "loop.stop=no_gain:0")
    assert result.status == "error" and result.error.message.startswith("loop.stop: 'no_gain:0' is not a stop rule")


def test_a_sweep_over_policies_sets_each_replay_beside_the_real_runs_and_they_agree(tmp_path, capsys):
    """Three tasks: a revision breaks a passing answer the grader sees get worse; revisions gain nothing; a
    revision fixes the answer. Swept over loop.returns and loop.stop (basic launcher, real subprocesses)."""
    flat = verdict("needs_revision", (TESTS, False), (NAME, True))
    turns = {
        "breaks": {"worker": [{"content": GOOD}, {"content": BROKEN}, {"content": BROKEN + "\n"}],
                   "grader": [verdict("needs_revision", (TESTS, True), (NAME, True), (STYLE, False)),
                              verdict("needs_revision", (TESTS, False), (NAME, True), (STYLE, False)),
                              verdict("needs_revision", (TESTS, False), (NAME, True), (STYLE, False))]},
        "flat": {"worker": [{"content": BROKEN}, {"content": BROKEN + "\n"}, {"content": BROKEN + "\n\n"}],
                 "grader": [flat, flat, flat]},
        "fixed": {"worker": [{"content": BROKEN}, {"content": GOOD}],
                  "grader": [flat, verdict("satisfied", (TESTS, True), (NAME, True))]},
    }
    script = write_script(tmp_path / "s.yaml", worker=[], grader=[], tasks=turns)
    data = tmp_path / "tasks.jsonl"
    rubric = f"- {TESTS}\n- {NAME}"  # names no tool: a satisfied verdict needs no test run of the grader's
    data.write_text("".join(json.dumps({"id": task, "task": "Write find_duplicates(lst).", "rubric": rubric}) + "\n" for task in turns))
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", *CODE, *scripted_overrides(script), f"rubric.dataset={data}", "grader.max_iterations=3",
                   "loop.returns=last,best", "loop.stop=none,no_gain", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]  # some runs end max_iterations_reached

    capsys.readouterr()
    assert run_command(["policies", str(sweep_dir), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    beside = {row["policy"]: row for row in found["beside_real"]}
    assert sorted(beside) == ["best", "best, stop=no_gain:1", "stop=no_gain:1"]
    for policy, row in beside.items():
        replayed, real = row["replayed"], row["real"]
        assert row["pairs"] == 3 and (row["agreed"], row["compared"]) == (3, 3), policy
        assert (replayed["passed"], replayed["known"]) == (real["passed"], real["known"]), policy
        assert abs(real["tokens"] - replayed["tokens"]) <= 0.01 * replayed["tokens"], (policy, real["tokens"], replayed["tokens"])
    as_run = next(r for r in found["policies"] if r["policy"] == "as run (last)")
    assert (as_run["passed"], beside["best"]["real"]["passed"]) == (1, 2)  # best keeps the answer the revision broke
    assert beside["stop=no_gain:1"]["real"]["tokens"] < 0.9 * as_run["tokens"]  # the stop saved spend
    assert {r["policy"] for r in found["policies"] if r["configuration"] == beside["best"]["configuration"]} >= set(beside)

    text = (sweep_dir / "report.md").read_text()
    (row,) = [r for r in md_table(text, "### The replay beside real runs") if r["policy"] == "best"]
    assert (row["replayed passed"], row["real passed"], row["outcomes alike"]) == ("2/3 (66.7%, 95% CI 20.8-93.9%)",) * 2 + ("3/3",)
    assert row["real vs replayed tokens"] == "0.0%" and '<table id="policies-real"' in (sweep_dir / "report.html").read_text()
    capsys.readouterr()
    assert run_command(["policies", str(sweep_dir)]) == 0
    assert "beside the real runs of a configuration alike but in loop.returns and loop.stop" in capsys.readouterr().out
