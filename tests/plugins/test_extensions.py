"""Extending the loop from config: evaluation callables, middleware, the grader's transcript, local tools.

The docs' example module (``my_loop.py`` in docs/extending-the-loop.md) is written to a temp
dir exactly as printed and used from there; the runs are real agents with scripted models.
"""

from __future__ import annotations

import json
import re
import sys
from typing import NotRequired

import pytest
from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware
from support import readme
from support.helpers import (
    only_task,
    read_events,
    run_cli,
    run_json,
    run_scripted,
    scripted_overrides,
    task_dir_of,
    verdict,
    write_script,
)

from rubric_runner.models.scripted import ScriptedChatModel

TASK = "Summarise photosynthesis in one sentence."
LOOK = {"content": "Let me look around first.", "tool_calls": [{"name": "ls", "args": {"path": "/"}}]}
SATISFIED = verdict("satisfied", ("One sentence", True))


def _section() -> str:
    """The docs' "Extending the loop" section (docs/extending-the-loop.md)."""
    return readme.sections()["Extending the loop"]


class SyncOnly(AgentMiddleware):
    """Wraps model calls with the sync form only: unusable in async runs."""

    def wrap_model_call(self, request, handler):
        return handler(request)


class GraderState(AgentState):
    """The grader's state with one field of this test's own."""

    round: NotRequired[int]


def number_the_round(state, iteration):
    """``grader.build_grader_state``: tell the grader which round it grades."""
    return {"round": iteration + 1}


class SeeRound(AgentMiddleware):
    """Keeps the ``round`` each grader model call finds in its state."""

    seen: list = []

    async def awrap_model_call(self, request, handler):
        SeeRound.seen.append(request.state.get("round"))
        return await handler(request)


@pytest.fixture(scope="module")
def my_loop(tmp_path_factory):
    """The README's ``my_loop.py``, importable for in-process runs; its dir for subprocess runs."""
    files = dict(re.findall(r"```python\n# (\S+)\n(.*?)```", _section(), re.DOTALL))
    assert list(files) == ["my_loop.py"]
    home = tmp_path_factory.mktemp("my_loop")
    (home / "my_loop.py").write_text(files["my_loop.py"], encoding="utf-8")
    sys.path.insert(0, str(home))
    try:
        yield home
    finally:
        sys.path.remove(str(home))
        sys.modules.pop("my_loop", None)


def _readme_override(start: str) -> str:
    """The README's override that starts with ``start``, as written there."""
    found = re.findall(rf"'({re.escape(start)}[^']*)'|(?<=\s)({re.escape(start)}\S*)", _section())
    assert found, f"README's Extending the loop shows no override starting {start!r}"
    return next(part for part in found[0] if part)


def test_the_readme_example_plugs_into_every_seam_from_the_command_line(my_loop, tmp_path):
    seams = [
        _readme_override("grader.on_evaluation="),
        _readme_override("'worker.middleware=[{_target_: my_loop.CountCalls".strip("'")),
        _readme_override("grader.middleware=[{_target_: my_loop.CountCalls"),
        _readme_override("+grader.tools={my_loop.shout"),
    ]
    assert seams == ["grader.on_evaluation=[my_loop.log_pass]",
                     "worker.middleware=[{_target_: my_loop.CountCalls, path: worker_calls.txt}]",
                     "grader.middleware=[{_target_: my_loop.CountCalls, path: grader_calls.txt}]",
                     '+grader.tools={my_loop.shout: {suffix: "?!"}}']
    script = write_script(
        tmp_path / "s.yaml",
        worker=[LOOK, {"content": "A draft."}, {"content": "Plants turn light into sugar."}],
        grader=[
            {"tool_calls": [{"name": "shout", "args": {"text": "sugar"}}]},
            verdict("needs_revision", ("One sentence", False)),
            SATISFIED,
        ],
    )
    run_dir = tmp_path / "run"
    proc = run_cli(*scripted_overrides(script, f"rubric.task={TASK}"), *seams, f"hydra.run.dir={run_dir}",
                   cwd=tmp_path, env={"PYTHONPATH": str(my_loop)})
    assert proc.returncode == 0, proc.stderr
    record = run_json(run_dir)
    assert record["status"] == "satisfied"
    passes = [json.loads(line) for line in (task_dir_of(run_dir) / "passes.jsonl").read_text().splitlines()]
    assert passes == [{"task": "task", "repeat": 0, "iteration": 0, "result": "needs_revision"},
                      {"task": "task", "repeat": 0, "iteration": 1, "result": "satisfied"}]
    usage = record["task"]["usage"]
    assert (usage["worker"]["calls"], usage["grader"]["calls"]) == (3, 3)
    assert (tmp_path / "worker_calls.txt").read_text().count("call") == 3
    assert (tmp_path / "grader_calls.txt").read_text().count("call") == 3
    outputs = [(e["agent"], e["tool"], e["output"]) for e in read_events(run_dir) if e["event"] == "tool_call_end"]
    assert ("grader", "shout", "SUGAR?!") in outputs


def _grader_payloads(monkeypatch) -> list[str]:
    """The first message of every grader call the scripted model receives, from now on."""
    payloads: list[str] = []
    original = ScriptedChatModel._agenerate

    async def spy(self, messages, *args, **kwargs):
        texts = [str(m.content) for m in messages]
        payloads.extend(text for text in texts if "<transcript-" in text)
        return await original(self, messages, *args, **kwargs)

    monkeypatch.setattr(ScriptedChatModel, "_agenerate", spy)
    return payloads


@pytest.mark.parametrize("trimmed", [True, False])
def test_prepare_messages_for_grader_trims_what_the_grader_receives(my_loop, tmp_path, monkeypatch, trimmed):
    payloads = _grader_payloads(monkeypatch)
    script = write_script(tmp_path / "s.yaml", worker=[LOOK, {"content": "Plants turn light into sugar."}],
                          grader=[SATISFIED])
    extra = ["grader.prepare_messages_for_grader=my_loop.task_and_answer"] if trimmed else []
    result, _ = run_scripted(tmp_path, script, f"rubric.task={TASK}", *extra)
    assert result.status == "satisfied", result.error
    assert len(payloads) == 1
    transcript = payloads[0].split("<transcript-", 1)[1]
    assert f"[user] {TASK}" in transcript and "[assistant] Plants turn light into sugar." in transcript
    for earlier in ("Let me look around first.", "[tool:ls]"):
        assert (earlier in transcript) is not trimmed


def test_build_grader_state_adds_fields_the_state_schema_declares(tmp_path, monkeypatch):
    monkeypatch.setattr(SeeRound, "seen", [])
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "a"}, {"content": "b"}],
                          grader=[verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])
    result, _ = run_scripted(tmp_path, script, "grader.build_grader_state=test_extensions.number_the_round",
                             "grader.state_schema=test_extensions.GraderState",
                             "grader.middleware=[{_target_: test_extensions.SeeRound}]")
    assert result.status == "satisfied", result.error
    assert SeeRound.seen == [1, 2]


def test_a_langchain_middleware_from_config_runs_in_the_grader(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[{"raise": "provider 500"}, SATISFIED])
    retry = "grader.middleware=[{_target_: langchain.agents.middleware.ModelRetryMiddleware, max_retries: 1, initial_delay: 0, jitter: false}]"
    without, _ = run_scripted(tmp_path / "without", script)
    assert without.status == "grader_error" and "provider 500" in without.error.message
    result, _ = run_scripted(tmp_path / "with", script, retry)
    assert result.status == "satisfied", result.error


def test_a_langchain_middleware_from_config_runs_in_the_worker(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[LOOK, {"content": "never reached"}], grader=[SATISFIED])
    limit = "worker.middleware=[{_target_: langchain.agents.middleware.ModelCallLimitMiddleware, run_limit: 1}]"
    result, _ = run_scripted(tmp_path, script, limit)
    assert only_task(result).usage["worker"].calls == 1
    assert "limit" in only_task(result).final_answer.lower() and "never reached" not in only_task(result).final_answer


def test_a_local_tool_by_import_path_with_its_setting_from_config(my_loop, tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}],
                          grader=[{"tool_calls": [{"name": "shout", "args": {"text": "hi"}}]}, SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, "+grader.tools={my_loop.shout: {suffix: '??'}}")
    assert result.status == "satisfied", result.error
    assert [e["output"] for e in read_events(run_dir) if e["event"] == "tool_call_end"] == ["HI??"]
    assert "my_loop.shout" in result.header.grader.tools


BAD = [
    ("grader.middleware=[{_target_: no_such_module.Thing}]", "grader.middleware[0]._target_",
     "cannot import 'no_such_module.Thing': no module named 'no_such_module'"),
    ("grader.middleware=[{_target_: collections.OrderedDict}]", "grader.middleware[0]",
     "collections.OrderedDict(...) made OrderedDict, not an AgentMiddleware"),
    ("grader.middleware=[{run_limit: 5}]", "grader.middleware[0]", "a middleware needs a _target_"),
    ("worker.middleware=[{_target_: langchain.agents.middleware.ModelCallLimitMiddleware, runlimit: 5}]",
     "worker.middleware[0]", "unexpected keyword argument 'runlimit'"),
    ("worker.middleware=[{_target_: test_extensions.SyncOnly}]", "worker.middleware[0]",
     "test_extensions.SyncOnly has wrap_model_call but no awrap_model_call"),
    ("grader.middleware=[{_target_: langchain.agents.middleware.ModelCallLimitMiddleware, run_limit: 5}]",
     "grader.middleware[0]", "the stack already has a middleware named 'ModelCallLimitMiddleware'"),
    ("grader.on_evaluation=[my_loop.no_such_function]", "grader.on_evaluation[0]", "'my_loop' has no 'no_such_function'"),
    ("grader.on_evaluation=[rubric_runner.paths.CONF_DIR]", "grader.on_evaluation[0]", "is a PosixPath, not a function"),
    ("grader.on_evaluation=[my_loop.task_and_answer]", "grader.on_evaluation[0]",
     "cannot be called as task_and_answer(event=)"),
    ("grader.on_evaluation=[log_pass]", "grader.on_evaluation[0]", "'log_pass' is not a dotted import path"),
    ("grader.prepare_messages_for_grader=shutil.copy", "grader.prepare_messages_for_grader",
     "cannot be called as copy(messages)"),
    ("grader.build_grader_state=my_loop.log_pass", "grader.build_grader_state", "needs grader.state_schema"),
    ("grader.state_schema=rubric_runner.context.TaskRef", "grader.state_schema", "has no messages field"),
    ("grader.context_schema=rubric_runner.context.TaskRef", "grader.context_schema", "removed: no runtime context reaches the grader"),
    ("+grader.tools={my_loop.shout: {suffix: '????'}}", "grader.tools.my_loop.shout.suffix",
     "String should have at most 3 characters, got '????'"),
    ("+grader.tools={my_loop.json: {}}", "grader.tools.my_loop.json", "'my_loop.json' is not a tool"),
    ("+grader.tools={nowhere.shout: {}}", "grader.tools.nowhere.shout", "no module named 'nowhere'"),
]


@pytest.mark.parametrize("override,key,problem", BAD, ids=[key + ":" + problem[:24] for _, key, problem in BAD])
def test_a_bad_seam_ends_before_any_model_call_naming_its_key(my_loop, tmp_path, override, key, problem):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, override)
    assert (result.status, result.exit_code, result.error.type) == ("error", 2, "UsageError")
    assert result.error.key == key
    assert problem in result.error.message
    assert not any(e["event"] == "model_call_start" for e in read_events(run_dir))


def test_a_bad_target_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[SATISFIED])
    proc = run_cli(*scripted_overrides(script), "worker.middleware=[{_target_: rubric_runner.nowhere.Thing}]",
                   f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: worker.middleware[0]._target_: 'rubric_runner' has no 'nowhere.Thing' (a dotted path such as "
        "my_module.name; a module in the working directory needs PYTHONPATH=.)"
    ]
