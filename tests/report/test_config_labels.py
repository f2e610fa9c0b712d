"""Configuration labels tell configurations apart: two grader scripts whose paths share a long prefix read
apart, by their tails, beside a configuration that sets no script."""

from __future__ import annotations

from rubric_runner.records import GraderInfo, ModelInfo, RubricInfo, RunHeader
from rubric_runner.report.configs import VALUE_CHARS, group_labels

PREFIX = "/home/someone/checkouts/rubric_runner/rubric_runner/data/scripts/"


def _header(config: dict) -> RunHeader:
    return RunHeader(worker=ModelInfo(model="scripted:w"), grader=GraderInfo(model="scripted:judge"),
                     rubric=RubricInfo(name="code"), config=config)


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
