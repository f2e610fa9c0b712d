"""Configuration labels tell configurations apart: two grader scripts whose paths share a long prefix read
apart, by their tails, beside a configuration that sets no script; a group choice by its override, not the keys
it set."""

from __future__ import annotations

from support.helpers import md_table, run_cli, scripted_overrides, verdict, write_script

from rubric_runner.records import ConfigSources, GraderInfo, ModelInfo, RubricInfo, RunHeader
from rubric_runner.report.configs import VALUE_CHARS, grader_labels, group_labels

PREFIX = "/home/someone/checkouts/rubric_runner/rubric_runner/data/scripts/"


def _header(config: dict, *overrides: str, config_dirs: tuple[str, ...] = ()) -> RunHeader:
    return RunHeader(worker=ModelInfo(model="scripted:w"), grader=GraderInfo(model="scripted:judge"),
                     rubric=RubricInfo(name="code"), config=config,
                     sources=ConfigSources(overrides=list(overrides), config_dirs=list(config_dirs)))


def test_grader_scripts_with_a_long_common_prefix_read_apart_by_their_tails():
    scripts = [PREFIX + "graders_for_the_long_tasks/satisfied_after_two_passes.yaml",
               PREFIX + "graders_for_the_long_tasks/never_satisfied_at_all.yaml"]
    headers = [("a", _header({"grader": {"script": scripts[0]}})), ("b", _header({"grader": {"script": scripts[1]}})),
               ("c", _header({"grader": {"model": "scripted:other"}}))]
    named = group_labels(headers)
    assert named == {"a": "grader.script=\u2026/satisfied_after_two_passes.yaml",
                     "b": "grader.script=\u2026/never_satisfied_at_all.yaml", "c": "grader.model=scripted:other"}
    long_tail = [("a", _header({"grader": {"script": PREFIX + "a/" + "s" * 50 + "_one.yaml"}})),
                 ("b", _header({"grader": {"script": PREFIX + "a/" + "s" * 50 + "_two.yaml"}}))]
    cut = group_labels(long_tail)
    assert cut["a"].endswith("_one.yaml") and cut["b"].endswith("_two.yaml")
    assert all(len(label.split("=", 1)[1]) <= VALUE_CHARS for label in cut.values())


def test_values_that_cutting_would_make_alike_are_shown_whole():
    first, second = "x" * 60 + "-alpha", "x" * 60 + "-beta"
    named = group_labels([("a", _header({"worker": {"system_prompt": first}})), ("b", _header({"worker": {"system_prompt": second}}))])
    assert named == {"a": f"worker.system_prompt={first}", "b": f"worker.system_prompt={second}"}


def test_a_sweep_over_two_rubrics_labels_each_by_its_choice(tmp_path):
    script = write_script(tmp_path / "script.yaml", [{"content": "final"}] * 2, [verdict("satisfied", ("A", True))] * 2)
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", *scripted_overrides(script), "rubric=code,haiku", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert "pooled over 2 configurations (rubric=code: " in proc.stdout and "; rubric=haiku: " in proc.stdout, proc.stderr
    text = (sweep_dir / "report.md").read_text()
    assert [g["configuration"] for g in md_table(text, "## By configuration")] == ["rubric=code", "rubric=haiku"]
    html = (sweep_dir / "report.html").read_text()
    assert ">rubric=code</a>" in html and ">rubric=haiku</a>" in html and "rubric.text=" not in html


def test_alike_overrides_are_told_apart_by_the_resolved_keys_that_differ():
    code, haiku = {"rubric": {"name": "code", "text": "t"}}, {"rubric": {"name": "haiku", "text": "t"}}
    headers = [("a", _header(code, "worker=scripted", "rubric=code")),
               ("b", _header(haiku, "worker=scripted", "rubric=haiku")),
               ("c", _header({"rubric": {"name": "haiku", "text": "mine"}}, "worker=scripted", "rubric=haiku", "run.concurrency=4",
                             config_dirs=("/home/someone/conf",))),
               ("d", _header({**code, "worker": {"model": "scripted:beta"}}, "worker=scripted", "rubric=code",
                             "worker.model=scripted\\:beta"))]
    assert group_labels(headers) == {"a": "rubric=code", "b": "rubric=haiku, rubric.text=t", "c": "rubric=haiku, rubric.text=mine",
                                     "d": "rubric=code, worker.model=scripted:beta"}


def test_graders_chosen_by_their_group_read_by_the_choice_not_the_keys_it_set():
    haiku = {"grader": {"model": "anthropic:claude-haiku-4-5", "temperature": 0.0, "max_iterations": 3}}
    sonnet = {"grader": {"model": "anthropic:claude-sonnet-4-5", "temperature": 0.2, "max_iterations": 3}}
    named = grader_labels([("a", _header(haiku, "grader=haiku", "worker=scripted")),
                           ("b", _header(sonnet, "grader=sonnet", "worker=scripted"))])
    assert named == {"a": "grader=haiku", "b": "grader=sonnet"}
    alike = grader_labels([("a", _header(haiku, "grader=haiku", "grader.max_iterations=2")),
                           ("b", _header(sonnet | {"grader": {**sonnet["grader"], "model": "x:y"}}, "grader=haiku",
                                         "grader.max_iterations=3"))])
    assert alike == {"a": "grader.model=anthropic:claude-haiku-4-5, grader.temperature=0.0",
                     "b": "grader.model=x:y, grader.temperature=0.2"}  # the budget of passes is no grader's
