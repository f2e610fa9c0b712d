"""Plugin loading and the tool registry, in-process: built-in and bundled plugins, config errors, worker tools."""

from __future__ import annotations

import json
import logging

import pytest
from support.helpers import (
    ROOT,
    compose_config,
    only_task,
    read_events,
    run_scripted,
    task_dir_of,
    verdict,
    write_script,
)

from rubric_runner import hookimpl
from rubric_runner.cli import run_command
from rubric_runner.plugins import manager
from rubric_runner.plugins.manager import PluginInfo, Plugins
from rubric_runner.plugins.registry import ToolRegistry
from rubric_runner.records import task_records

BUILTIN = ["builtin_tools/run_test_suite", "builtin_tools/run_check", *(f"builtin_tools/{name}" for name in (
    "ls", "read_file", "glob", "grep", "run_tests", "workspace_tests"))]
"""The tools rubric_runner registers itself, in order."""


def test_builtin_tools_come_through_the_same_hook(monkeypatch):
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "")
    registry = ToolRegistry(Plugins())
    assert list(registry.entries) == BUILTIN
    entry = registry.find("run_test_suite", "grader.tools.run_test_suite")
    assert (entry.plugin, entry.package) == ("builtin_tools", "rubric_runner")
    assert registry.find("builtin_tools/run_test_suite", "k") is entry


def test_bundled_plugins_load_from_their_packages():
    plugins = Plugins()
    assert plugins.failures == []
    assert {name: (info.package, info.version) for name, info in plugins.info.items()} == {
        "builtin_tools": ("rubric_runner", "0.1.0"),
        "reports": ("rubric_runner", "0.1.0"),
        "syllables": ("rubric_runner_syllables", "0.1.0"),
        "textstats": ("rubric_runner_textstats", "0.1.0"),
    }
    registry = ToolRegistry(plugins)
    assert sorted(registry.entries) == sorted([*BUILTIN, "syllables/count_syllables", "textstats/text_stats"])


def test_without_the_plugin_packages_the_bundled_rubrics_tools_come_with_rubric_runner(monkeypatch):
    monkeypatch.setattr(manager.metadata, "entry_points", lambda group: [])  # a plain install: no plugin package
    plugins = Plugins()
    assert plugins.failures == []
    assert {name: info.package for name, info in plugins.info.items()} == dict.fromkeys(
        ("builtin_tools", "reports", "syllables", "textstats"), "rubric_runner")
    registry = ToolRegistry(plugins)
    assert {"syllables/count_syllables", "textstats/text_stats"} <= set(registry.entries)
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "textstats")
    assert set(Plugins().info) == {"builtin_tools", "reports", "textstats"}  # chosen like any other plugin


def test_env_var_naming_a_missing_plugin_warns_and_goes_on(monkeypatch, caplog):
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "syllables, no_such_plugin")
    with caplog.at_level(logging.WARNING, logger="rubric_runner.plugins.manager"):
        plugins = Plugins()
    assert set(plugins.info) == {"builtin_tools", "reports", "syllables"}
    assert [failure.name for failure in plugins.failures] == ["no_such_plugin"]
    assert "plugin 'no_such_plugin' failed to load" in caplog.text


def test_unknown_tool_is_a_config_error_naming_the_key(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[])
    result, _ = run_scripted(tmp_path, script, "+grader.tools.word_count={}")
    assert (result.status, result.exit_code, result.error.key) == ("error", 2, "grader.tools.word_count")
    message = result.error.message
    assert message.startswith("grader.tools.word_count: unknown tool 'word_count'")
    assert ("available tools: count_syllables, glob, grep, ls, read_file, run_check, run_test_suite, run_tests, "
            "text_stats, workspace_tests") in message
    assert "\n" not in message


def test_tool_removed_from_the_command_line(tmp_path):
    """``~grader.tools.NAME`` drops a preset's tool: the haiku rubric then runs without the syllable plugin."""
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    config = compose_config(["~grader.tools.count_syllables"])
    assert dict(config.grader.tools) == {}
    result, _ = run_scripted(tmp_path, script, "~grader.tools.count_syllables")
    assert result.status == "satisfied"


@pytest.mark.parametrize(
    ("override", "key", "problem"),
    [
        ("+grader.tools.count_syllables.meter=iambic", "count_syllables.meter", "tool 'count_syllables' has no setting"),
        ("grader.tools.count_syllables.pattern=[5,seven,5]", "count_syllables.pattern", "Input should be a valid integer"),
        ("+grader.tools.text_stats.required_terms=5", "text_stats.required_terms", "Input should be a valid list"),
        ("+grader.tools.run_test_suite.suite=/no/such.yaml", "run_test_suite.suite", "Path does not point to a file"),
    ],
)
def test_bad_tool_settings_are_one_line_config_errors(tmp_path, override, key, problem):
    key = f"grader.tools.{key}"
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[])
    result, _ = run_scripted(tmp_path, script, override)
    assert (result.status, result.exit_code, result.error.key) == ("error", 2, key)
    assert result.error.message.startswith(f"{key}: {problem}")
    assert "\n" not in result.error.message


def test_scripted_worker_calls_a_registered_tool(tmp_path):
    """``worker.tools`` uses the same registry: the worker runs the test suite before answering."""
    code = (
        "def find_duplicates(lst):\n    out = []\n    for i, x in enumerate(lst):\n"
        "        if x in lst[:i] and x not in out:\n            out.append(x)\n    return out\n"
    )
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"tool_calls": [{"name": "run_test_suite", "args": {"code": code}}]}, {"content": code}],
        grader=[verdict("satisfied", ("All tests pass in run_test_suite", True))],
    )
    suite = ROOT / "rubric_runner" / "data" / "suites" / "find_duplicates.yaml"
    overrides = [
        "rubric=code",
        "~grader.tools.run_test_suite",
        f"+worker.tools.run_test_suite={{suite: {suite}}}",
        "run.preview_chars=4000",
    ]
    result, run_dir = run_scripted(tmp_path, script, *overrides)
    assert result.status == "satisfied", result.error
    assert result.header.worker.tools == ["run_test_suite"] and result.header.grader.tools == []
    ends = [e for e in read_events(run_dir) if e["event"] == "tool_call_end" and e["tool"] == "run_test_suite"]
    assert [e["agent"] for e in ends] == ["worker"]
    output = json.loads(ends[0]["output"])
    assert output["ok"] is True and output["passed"] == ["test_basic", "test_empty", "test_no_duplicates", "test_unhashable"]


def test_same_tool_twice_for_one_role_is_refused(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[])
    overrides = ["+grader.tools={syllables/count_syllables: {}}"]
    result, _ = run_scripted(tmp_path, script, *overrides)
    assert result.error.key == "grader.tools.syllables/count_syllables"
    assert "grader already has a tool named 'count_syllables'" in result.error.message


def test_run_uses_tool_settings_from_config(tmp_path):
    poem = "one two three four five\nsix seven eight nine ten twelve\nthirteen fourteen"
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": poem}],
        grader=[{"tool_calls": [{"name": "count_syllables", "args": {"text": poem}}]}, verdict("failed")],
    )
    overrides = ["grader.tools.count_syllables.pattern=[5,7,4]", "run.preview_chars=4000"]
    _, run_dir = run_scripted(tmp_path, script, *overrides)
    ends = [e for e in read_events(run_dir) if e["event"] == "tool_call_end"]
    assert '"syllables": [5, 7, 4], "pattern": [5, 7, 4], "matches_pattern": true' in ends[0]["output"]


class Greeter:
    """A plugin that adds a command."""

    @hookimpl
    def register_commands(self, subparsers):
        parser = subparsers.add_parser("greet", help="say hello")
        parser.add_argument("name")
        parser.set_defaults(handler=lambda args: print(f"hello {args.name}") or 3)


class Broken:
    """A plugin whose command hook fails."""

    @hookimpl
    def register_commands(self, subparsers):
        raise RuntimeError("no commands today")


def test_a_plugin_adds_a_command(monkeypatch, capsys):
    plugins = Plugins()
    plugins._add(Greeter(), PluginInfo("greeter", "tests", "0"))
    plugins._add(Broken(), PluginInfo("broken", "tests", "0"))
    monkeypatch.setattr(Plugins, "load", classmethod(lambda cls: plugins))
    assert run_command(["greet", "ada"]) == 3
    assert capsys.readouterr().out == "hello ada\n"
    assert [failure.name for failure in plugins.failures] == ["broken"]
    assert run_command(["greeet"]) == 2
    assert "(commands: compare, continue, doctor, golden, greet, plugins, policies, regrade, report, resume, review, tools;" in capsys.readouterr().err


def echo(text: str) -> str:
    """Say the text back."""
    return text


class DottedName:
    @hookimpl
    def register_tools(self, register):
        register(echo, name="my.echo")


def test_a_plugin_may_not_register_a_dotted_name_which_config_reads_as_an_import_path(monkeypatch):
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", "")
    plugins = Plugins()
    plugins._add(DottedName(), PluginInfo("dotted", "tests", "0"))
    registry = ToolRegistry(plugins)
    assert [(f.name, f.error) for f in plugins.failures] == [
        ("dotted", "register_tools failed: ValueError: tool name 'my.echo' has a dot (a dotted name in config is an import path)")]
    assert list(registry.entries) == BUILTIN


UNRULY_TOOLS = '''
from langchain_core.tools import tool

@tool
def explode(text: str) -> str:
    """Raises."""
    raise ValueError("the disk is on fire")

@tool
def flood(text: str) -> str:
    """Answers 200,000 characters."""
    return "x" * 200_000
'''


def test_an_answer_over_the_cap_is_cut_with_a_note_the_model_reads_and_the_cut_recorded(tmp_path, monkeypatch):
    (tmp_path / "unruly_tools.py").write_text(UNRULY_TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    flood = {"tool_calls": [{"name": "flood", "args": {"text": "hi"}}]}
    script = write_script(tmp_path / "s.yaml", worker=[flood, {"content": "done"}],
                          grader=[flood, verdict("satisfied", ("c", True))])
    tools = ["+worker.tools={unruly_tools.flood: {}}", "+grader.tools={unruly_tools.flood: {}}"]
    result, run_dir = run_scripted(tmp_path, script, *tools, "run.tool_output_chars=1000")
    assert result.status == "satisfied", result.error
    cut = [c.model_dump() for c in only_task(result).tool_outputs_cut]
    assert cut == [{"agent": agent, "tool": "flood", "chars": 200_000, "kept": 1000} for agent in ("worker", "grader")]
    events = [{k: e[k] for k in ("agent", "tool", "chars", "kept")} for e in read_events(run_dir) if e["event"] == "tool_output_cut"]
    assert events == cut
    told = [m for m in json.loads((task_dir_of(run_dir) / "transcript.json").read_text())["messages"] if m["type"] == "tool"]
    note = "\n[tool output cut: 199000 of 200000 characters left out (run.tool_output_chars=1000)]"
    assert [m["data"]["content"] for m in told] == ["x" * 1000 + note]
    assert only_task(result).usage["grader"].input_tokens < 5000  # the grader was sent the cut answer, not 50,000 tokens
    assert compose_config().run.tool_output_chars == 40000


def test_a_grader_tool_that_raises_is_named_with_its_error_in_the_grader_error(tmp_path, monkeypatch):
    (tmp_path / "unruly_tools.py").write_text(UNRULY_TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "done"}],
                          grader=[{"tool_calls": [{"name": "explode", "args": {"text": "hi"}}]}])
    result, _ = run_scripted(tmp_path, script, "+grader.tools={unruly_tools.explode: {}}")
    assert result.status == "grader_error"
    assert result.error.message == ("grader scripted:demo: its tool 'explode' raised ValueError: the disk is on fire "
                                    "(fix: fix the tool 'explode', or take it out of grader.tools)")
    assert "structured_output" not in only_task(result).evaluations[-1].explanation


def _override(value) -> str:
    """``value`` as a Hydra override's value (keys unquoted)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_override(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_override(item) for item in value) + "]"
    return json.dumps(value)


@pytest.mark.parametrize(("case", "problem"), [
    ({"name": "test_basic", "args": [[1, 1]]}, "case 'test_basic' has no 'expected', the value the function must return"),
    ({"name": "test_basic", "args": "hello", "expected": []},
     "case 'test_basic': 'args' must be a list of the arguments, got 'hello'; for one argument: ['hello']"),
    ({"name": "test_basic", "args": [[1]], "expect": []}, "case 'test_basic' has a key 'expect' a case does not take"),
])
def test_a_bad_case_table_is_one_line_naming_the_rubric_the_case_and_the_key_before_any_model_call(tmp_path, case, problem):
    table = tmp_path / "cases.yaml"
    table.write_text(json.dumps({"function": "find_duplicates", "cases": [case]}))
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[verdict("satisfied", ("c", True))])
    from_file, run_dir = run_scripted(tmp_path / "file", script, "rubric=code", f"grader.tools.run_test_suite.suite={table}")
    inline, _ = run_scripted(tmp_path / "inline", script, "rubric=code", "~grader.tools.run_test_suite",
                             f"+grader.tools.run_test_suite={_override({'function': 'find_duplicates', 'cases': [case]})}")
    for result, key, source in ((from_file, "grader.tools.run_test_suite.suite", str(table)),
                                (inline, "grader.tools.run_test_suite.cases", "inline cases")):
        assert (result.status, result.exit_code, result.error.key) == ("error", 2, key)
        assert result.error.message.startswith(f"{key}: rubric 'code': {source}: {problem}")
        assert "\n" not in result.error.message
        assert all(task.usage["worker"].calls == 0 for task in task_records(result))
    assert not [e for e in read_events(run_dir) if e["event"] == "model_call_start"]
