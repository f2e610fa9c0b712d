"""Repeat gradings, grader panels and golden transcripts, on the scripted HumanEval demo's five transcripts."""

from __future__ import annotations

import json
import re
import shutil

import pytest

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.records import ExitCode
from rubric_runner.review import figures
from rubric_runner.review.labels import (
    LABELS_FILE,
    PersonLabel,
    read_labels,
    save_label,
)

JUDGES = "${package_data:scripts/judges/%s.yaml}"
DEMO = ["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]", "run.console=false"]
EXAMPLES = "Every docstring example run by run_test_suite passes"
BEYOND = "The code does what the docstring asks, for inputs beyond its examples too"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The scripted HumanEval demo's run: three right final answers and two wrong ones."""
    run_dir = tmp_path_factory.mktemp("demo") / "run"
    assert rubric_runner.run(DEMO, run_dir).status.value == "failed"
    return run_dir


@pytest.fixture(scope="module")
def repeated(demo):
    """A regrade of the demo with two judges, three times each: (exit code, regrade dir, console)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_command(["regrade", "--repeats", "3", str(demo), "-m",
                            f"grader.script={JUDGES % 'steady'},{JUDGES % 'wavering'}", "run.console=false"])
    (regrade_dir,) = (demo / "regrades").iterdir()
    return code, regrade_dir, out.getvalue()


def _verdicts(job_dir):
    """Each task's verdict in one repeat's records, read from its task records."""
    record = json.loads((job_dir / "result.json").read_text())
    return {row["task_id"]: row["status"] == "satisfied" for row in record["tasks"]}


def _row(text, *starts):
    """The Markdown table row whose first cells are ``starts``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if cells[: len(starts)] == list(starts):
            return cells
    raise AssertionError(f"no row {starts} in:\n{text}")


def test_each_grader_grades_each_transcript_once_a_repeat_and_a_script_goes_on_between_repeats(repeated):
    code, regrade_dir, _ = repeated
    assert code == ExitCode.UNSATISFIED
    for grader in ("0", "1"):
        assert sorted(p.name for p in (regrade_dir / grader).iterdir()) == ["repeat-0", "repeat-1", "repeat-2"]
    steady = [_verdicts(regrade_dir / "0" / f"repeat-{k}") for k in range(3)]
    wavering = [_verdicts(regrade_dir / "1" / f"repeat-{k}") for k in range(3)]
    right = {"HumanEval-0": True, "HumanEval-1": True, "HumanEval-2": True, "HumanEval-3": False, "HumanEval-4": False}
    assert steady == [right] * 3
    # wavering.yaml's second and third passes: a script continues from where the repeat before left it
    assert [v["HumanEval-1"] for v in wavering] == [True, False, True]
    assert [v["HumanEval-2"] for v in wavering] == [True, True, False]
    assert [v["HumanEval-3"] for v in wavering] == [False, True, False]
    record = json.loads((regrade_dir / "1" / "repeat-1" / "tasks" / "HumanEval-4-r0" / "result.json").read_text())
    assert {c["name"]: c["passed"] for c in record["evaluations"][-1]["criteria"]}[EXAMPLES] is False


def test_the_agreement_report_gives_kappa_per_grader_and_criterion_the_panel_and_the_graders_agreement(repeated):
    _, regrade_dir, console = repeated
    text = (regrade_dir / "agreement.md").read_text()
    assert f"grader agreement: {regrade_dir / 'agreement.md'}" in console
    steady, wavering = f"grader.script={JUDGES % 'steady'}", f"grader.script={JUDGES % 'wavering'}"
    row = _row(text, steady, "5", "15")
    assert row[3].startswith("100.0%") and row[4].startswith("1.00") and row[5] == "0 of 5" and row[6] == "none"
    # wavering: 3 of 5 transcripts split 2-1 (P_i 1/3), 2 agree (P_i 1); 7 of 15 satisfied
    p_bar = (3 / 3 + 2) / 5
    p_e = (7 / 15) ** 2 + (8 / 15) ** 2
    row = _row(text, wavering, "5", "15")
    assert row[3].startswith(f"{100 * p_bar:.1f}%") and row[4].startswith(f"{(p_bar - p_e) / (1 - p_e):.2f}")
    assert row[5] == "3 of 5" and row[6] == f"{EXAMPLES}; {BEYOND}"
    assert _row(text, wavering, BEYOND)[5] == "no" and _row(text, steady, BEYOND)[5] == "yes"
    assert _row(text, wavering, EXAMPLES)[4] == "1 of 5"
    between = _row(text, f"{steady}, {wavering}")
    assert between[1] == "5" and between[3].startswith("1.00") and between[4].startswith("1.00")
    checks = text.split("## Graders against hidden checks")[1]
    panel = _row(checks, "panel (majority vote) of 2")
    assert panel[2].startswith("0/2") and panel[3].startswith("0/3")  # the wavering judge outvoted: no error left
    assert _row(checks, wavering)[2].startswith("1/6")  # its own false satisfied: HumanEval-3 once of 6 gradings
    report = (regrade_dir / "report.md").read_text().split("## Graders against themselves")[1].split("\n## ")[0]
    row = _row(report, "grader.script=\u2026/wavering.yaml", "5", "15")
    assert row[4].startswith("0.20") and row[5] == "3 of 5" and f"{BEYOND} (0.20)" in row[6]
    assert _row(report, "grader.script=\u2026/steady.yaml", "5", "15")[6] == "none"


def test_repeat_gradings_that_all_crashed_agree_on_nothing_and_are_counted(demo, tmp_path, capsys):
    """Issue 44, case 7: a grader whose every repeat grading failed (grader_error) read ``0 transcripts,
    0 gradings, 0 of 0, unstable criteria: none``, its ten gradings dropped unsaid."""
    run_dir = shutil.copytree(demo, tmp_path / "run", ignore=shutil.ignore_patterns("regrades"))
    down = tmp_path / "down.yaml"
    down.write_text("worker: []\ngrader:\n- raise: grader provider is down\n")
    assert run_command(["regrade", "--repeats", "2", str(run_dir), f"grader.script={down}", "run.console=false"]) == ExitCode.ERROR
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    row = _row((regrade_dir / "agreement.md").read_text(), f"grader.script={down}")
    assert row[1:] == ["0", "0", "n/a", "n/a", "n/a", "n/a", "10 (grader_error 10)"]
    report = (regrade_dir / "report.md").read_text().split("## Graders against themselves")[1]
    assert _row(report, "scripted:demo / scripted:demo / humaneval")[-4:] == ["n/a", "n/a", "n/a", "10 (grader_error 10)"]


def test_a_golden_set_made_from_a_labelled_run_fails_a_lenient_judge(demo, tmp_path, capsys):
    run_dir = tmp_path / "labelled"
    shutil.copytree(demo, run_dir, ignore=shutil.ignore_patterns("regrades"))
    save_label(run_dir, "tasks/HumanEval-3-r0", PersonLabel(False, {BEYOND: False}, "a withdrawal is not a negative balance"))
    save_label(run_dir, "tasks/HumanEval-0-r0", PersonLabel(True))
    assert set(read_labels(run_dir)) == {"tasks/HumanEval-0-r0", "tasks/HumanEval-3-r0"}
    assert not list(run_dir.glob(".labels.json.*"))  # the temp file was renamed over the labels file
    golden = tmp_path / "golden"
    assert run_command(["golden", "--from-checks", str(run_dir), str(golden)]) == 0
    made = json.loads((golden / "golden.json").read_text())
    assert (made["labels"], made["from_checks"], made["min_agreement"]) == (5, 3, 0.8)
    assert read_labels(golden)["tasks/HumanEval-3-r0"].note == "a withdrawal is not a negative balance"
    capsys.readouterr()
    assert run_command(["regrade", str(golden), f"grader.script={JUDGES % 'lenient'}", "run.console=false"]) == ExitCode.BELOW_THRESHOLD
    out = capsys.readouterr().out
    assert re.search(r"lenient\.yaml\}: agrees with the labels on 3/5 verdicts, 60\.0% .*below --min-agreement 0\.8", out), out
    assert run_command(["regrade", str(golden), f"grader.script={JUDGES % 'careful'}", "run.console=false"]) == 0
    assert "agrees with the labels on 5/5 verdicts" in capsys.readouterr().out
    assert run_command(["regrade", "--min-agreement", "0.5", str(golden), f"grader.script={JUDGES % 'lenient'}",
                        "run.console=false"]) == 0


def test_the_api_regrade_ranks_the_graders_and_tests_them_against_the_labels(demo, tmp_path, monkeypatch):
    """What the command says of a regrade comes from the API's answer: the ranking, agreement.md and the
    label test with its exit code; the grader is measured against the labels once, for both."""
    run_dir = shutil.copytree(demo, tmp_path / "labelled", ignore=shutil.ignore_patterns("regrades"))
    assert run_command(["golden", "--from-checks", str(run_dir), str(tmp_path / "golden")]) == 0
    lenient = [f"grader.script={JUDGES % 'lenient'}", "run.console=false"]
    measured = []
    against_labels = figures.against_labels
    monkeypatch.setattr(figures, "against_labels", lambda *a: measured.append(a) or against_labels(*a))
    done = rubric_runner.api.regrade(tmp_path / "golden", lenient)
    assert len(measured) == 1  # agreement.md's table and the label test read one measurement
    (test,) = done.label_tests
    assert (test.agreed, test.verdicts, test.below, done.min_agreement, done.exit_code) == (3, 5, True, 0.8, ExitCode.BELOW_THRESHOLD)
    assert done.agreement == done.dir / "agreement.md" and done.agreement.read_text().startswith("# Grader agreement")
    assert len(done.ranking) == 1 and "lenient.yaml}" in done.ranking[0], done.ranking
    lax = rubric_runner.api.regrade(tmp_path / "golden", lenient, min_agreement=0.5)
    assert (lax.label_tests[0].below, lax.exit_code) == (False, ExitCode.SATISFIED)
    unlabelled = rubric_runner.api.regrade(run_dir, lenient)
    assert (unlabelled.min_agreement, unlabelled.label_tests) == (None, [])


def test_the_golden_agreement_report_has_a_grader_against_people_table(demo, tmp_path):
    run_dir = tmp_path / "labelled"
    shutil.copytree(demo, run_dir, ignore=shutil.ignore_patterns("regrades"))
    save_label(run_dir, "tasks/HumanEval-3-r0", PersonLabel(False))
    assert run_command(["regrade", str(run_dir), f"grader.script={JUDGES % 'lenient'}", "run.console=false"]) == 0
    (regrade_dir,) = (run_dir / "regrades").iterdir()
    row = _row((regrade_dir / "agreement.md").read_text(), f"grader.script={JUDGES % 'lenient'}", "1")
    assert row[2].startswith("0.0%") and row[4].startswith("1/1")  # labelled not satisfied, graded satisfied


@pytest.mark.parametrize("args, says", [
    (["--repeats", "0"], "--repeats: 0 is no number of gradings"),
    (["--min-agreement", "80"], "--min-agreement: 80 is no share of verdicts"),
    (["RUN", "--repeats", "2"], "--repeats: options go before RUN_DIR"),
    (["--repeats", "2", "RUN", "run.cache=cache.sqlite"], "run.cache: a response cache gives every repeat"),
])
def test_bad_regrade_options_are_one_line_and_exit_2(demo, args, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in (demo / "regrades").iterdir()) if (demo / "regrades").exists() else []
    args = [str(demo) if a == "RUN" else a for a in args]
    if str(demo) not in args:
        args.append(str(demo))
    assert run_command(["regrade", *args]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    after = sorted(p.name for p in (demo / "regrades").iterdir()) if (demo / "regrades").exists() else []
    assert after == before


def test_golden_of_an_unlabelled_run_says_how_to_label_it(demo, tmp_path, capsys):
    assert not (demo / LABELS_FILE).exists()
    assert run_command(["golden", str(demo), str(tmp_path / "g")]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "has no labelled transcript" in err and "rubric-runner review RUN_DIR" in err
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("command", ["review", "regrade", "golden"])
def test_a_labels_file_that_is_not_json_stops_each_command_in_one_line(demo, tmp_path, command, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(demo, run_dir, ignore=shutil.ignore_patterns("regrades"))
    (run_dir / LABELS_FILE).write_text("{not json", encoding="utf-8")
    args = {"review": ["review", "--port", "0", str(run_dir)], "regrade": ["regrade", str(run_dir)],
            "golden": ["golden", str(run_dir), str(tmp_path / "g")]}[command]
    assert run_command(args) == ExitCode.USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {run_dir / LABELS_FILE}: is not JSON") and "move it away to start again" in line
    assert (run_dir / LABELS_FILE).read_text() == "{not json" and not (run_dir / "regrades").exists()


def test_golden_refuses_a_threshold_out_of_range_and_a_dir_that_is_not_empty(demo, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(demo, run_dir, ignore=shutil.ignore_patterns("regrades"))
    save_label(run_dir, "tasks/HumanEval-0-r0", PersonLabel(True))
    assert run_command(["golden", "--min-agreement", "1.5", str(run_dir), str(tmp_path / "g")]) == ExitCode.USAGE
    assert "--min-agreement: 1.5 is no share of verdicts" in capsys.readouterr().err
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert run_command(["golden", str(run_dir), str(taken)]) == ExitCode.USAGE
    assert f"OUT_DIR: {taken} is not empty" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    assert run_command(["golden", str(run_dir), str(tmp_path / "g")]) == 0
    assert [row["task_id"] for row in json.loads((tmp_path / "g" / "result.json").read_text())["tasks"]] == ["HumanEval-0"]
    assert [p.name for p in (tmp_path / "g" / "tasks").iterdir()] == ["HumanEval-0-r0"]


def test_repeats_of_a_task_without_an_id_are_one_task_in_the_agreement_figures(tmp_path):
    from support.helpers import scripted_overrides, verdict, write_script

    from rubric_runner.report.ratings import ratings_in

    wrong = "def find_duplicates(lst):\n    return []\n"
    script = write_script(tmp_path / "s.yaml", worker=[{"content": wrong}] * 3,
                          grader=[{"tool_calls": [{"name": "run_test_suite", "args": {"code": wrong}}]},
                                  verdict("satisfied", ("All tests pass in run_test_suite", True))] * 9)
    run_dir = tmp_path / "run"
    assert rubric_runner.run(scripted_overrides(script, "rubric=code", "run.repeats=3"), run_dir).status.value == "satisfied"
    regrade = rubric_runner.regrade(run_dir, [f"grader.script={script}", "run.console=false"], repeats=2)
    ratings = ratings_in(regrade.dir)
    assert len(ratings) == 6 and len({r.item for r in ratings}) == 3 and {r.checked for r in ratings} == {False}
    assert len({r.task for r in ratings}) == 1  # the three repeats are one task, the rubric's own message
    # the interval counts the one task once, not its three transcripts as three tasks (95% CI 43.9-100.0%)
    assert _row(regrade.agreement.read_text(), f"grader.script={script}", "-")[2] == "6/6 (100.0%, 95% CI 20.7-100.0%, 1 task)"
