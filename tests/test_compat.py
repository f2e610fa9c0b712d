"""Each assumption ``rubric_runner.compat`` makes about another package's internals, pinned by name: an
upgrade of deepagents, LangGraph, LangChain or Hydra that breaks one fails here, in one named test."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from conftest import verdict

from rubric_runner.compat import deepagents as compat_deepagents
from rubric_runner.compat import hydra as compat_hydra
from rubric_runner.compat import langchain as compat_langchain
from rubric_runner.compat import langgraph as compat_langgraph
from rubric_runner.models.scripted import ScriptedChatModel
from rubric_runner.paths import CONF_DIR

SEEN: list = []
"""What each call of a ``Seen`` model was given: its messages and its metadata."""


class Seen(ScriptedChatModel):
    """A scripted model that keeps what each call was given in ``SEEN``."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        SEEN.append((list(messages), dict(getattr(run_manager, "metadata", None) or {})))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def _loop(grader_turns: list[dict]) -> tuple[dict, list]:
    """A deep agent with RubricMiddleware: one answer, then a revision, graded by ``grader_turns``."""
    from deepagents import create_deep_agent
    from langgraph.checkpoint.memory import InMemorySaver

    SEEN.clear()
    grader = Seen(model="scripted:g", turns=grader_turns)
    worker = Seen(model="scripted:w", turns=[{"content": "draft"}, {"content": "final"}])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=3)
    agent = create_deep_agent(model=worker, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "Write it."}], "rubric": "- c"}, config))
    return agent.get_state(config).values, list(SEEN)


@pytest.fixture(scope="module")
def loop():
    return _loop([verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])


def test_deepagents_state_keys_say_how_the_loop_stands(loop):
    values, _ = loop
    state = compat_deepagents.LoopState.of(values)
    assert (state.status, state.iterations) == ("satisfied", 2)
    assert [e["result"] for e in state.evaluations] == ["needs_revision", "satisfied"]
    assert state.grading_run_id and all(e["grading_run_id"] == state.grading_run_id for e in state.evaluations)


def test_deepagents_revision_requests_carry_the_grader_source_name(loop):
    values, _ = loop
    revisions = [m for m in values["messages"] if m.type == "human" and m.name == compat_deepagents.GRADER_SOURCE]
    assert len(revisions) == 1 and "fix c" in revisions[0].content


def test_deepagents_grader_calls_carry_the_metadata_key_and_a_nonced_payload(loop):
    _, calls = loop
    grader = [(messages, metadata) for messages, metadata in calls if compat_deepagents.GRADER_METADATA_KEY in metadata]
    worker = [metadata for _, metadata in calls if compat_deepagents.GRADER_METADATA_KEY not in metadata]
    assert len(grader) == 2 and len(worker) == 2
    payload = next(str(m.content) for m in grader[0][0] if m.type == "human")
    nonces = {match.group(0) for match in compat_deepagents.NONCE.finditer(payload)}
    assert {re.sub(r"-[0-9a-f]{16}$", "", nonce) for nonce in nonces} == {"rubric", "transcript"}


def test_deepagents_verdict_schema_is_grader_response():
    schema = compat_deepagents.grader_response()
    assert schema.__name__ == compat_deepagents.GRADER_TOOL
    assert {"result", "explanation", "criteria"} <= set(schema.model_fields)


def test_deepagents_after_agent_grades_a_transcript_once():
    from langchain_core.messages import AIMessage, HumanMessage

    grader = ScriptedChatModel(model="scripted:g", turns=[verdict("needs_revision", ("c", False))])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=1)
    events: list = []
    state = compat_deepagents.grade_once(middleware, [HumanMessage("Write it."), AIMessage("final")], "- c", events.append, {})
    assert (state.status, state.iterations, len(state.evaluations)) == ("max_iterations_reached", 1, 1)
    assert [e["type"] for e in events] == ["rubric_evaluation_start", "rubric_evaluation_end"]


def test_langgraph_in_memory_saver_keeps_threads_in_three_dicts(loop):
    saver = compat_langgraph.InMemorySaver()
    assert all(isinstance(getattr(saver, name), dict) for name in ("storage", "blobs", "writes"))
    snapshot = compat_langgraph.snapshot(["a"])
    assert snapshot.value == ["a"]  # LangGraph's own snapshot type, as a delta channel's checkpoint holds it


def test_langgraph_postgres_saver_has_a_cursor():
    postgres = pytest.importorskip("langgraph.checkpoint.postgres.aio")
    assert callable(getattr(postgres.AsyncPostgresSaver, "_cursor", None))


def test_langchain_picks_a_structured_output_strategy_from_a_profile():
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4.1", api_key="unused")
    assert compat_langchain.supports_provider_strategy(model, []) in (True, False)


def test_langsmith_takes_a_runtime_override_for_thread_hops():
    from langsmith import _runtime_overrides

    compat_langchain.inline_langsmith()
    try:
        assert _runtime_overrides.get_runtime_overrides().aio_to_thread is compat_langchain._inline_unless_tracing
    finally:
        compat_langchain.langsmith_defaults()
    assert _runtime_overrides.get_runtime_overrides().aio_to_thread is None


def test_hydra_composes_with_config_dirs_searched_as_its_config_dir_flag_does(tmp_path):
    from rubric_runner.config.compose import register_configs

    (tmp_path / "rubric").mkdir()
    for name in ("code", "mine"):
        (tmp_path / "rubric" / f"{name}.yaml").write_text(f"# @package _global_\nrubric: {{name: {name}-of-mine, text: '- c', task: t}}\n")
    register_configs()
    assert compat_hydra.load([str(tmp_path)], ["rubric=mine"]).rubric.name == "mine-of-mine"  # a preset of the user's
    assert compat_hydra.load([str(tmp_path)], ["rubric=code"]).rubric.name == "code"  # the package's own comes first
    search = [(entry.provider, entry.path) for entry in compat_hydra.search_path([str(tmp_path)]).get_path()]
    assert search[-2:] == [("command-line", f"file://{tmp_path}"), ("schema", "structured://")]


def test_hydra_reports_the_command_lines_config_dirs(tmp_path):
    from omegaconf import OmegaConf

    hydra_node = OmegaConf.create({"runtime": {"config_sources": [
        {"path": "hydra.conf", "schema": "pkg", "provider": "hydra"},
        {"path": str(CONF_DIR), "schema": "file", "provider": "main"},
        {"path": str(tmp_path), "schema": "file", "provider": "command-line"},
    ]}})
    assert compat_hydra.config_dirs_of(hydra_node) == [str(tmp_path)]


def test_hydra_splits_sweep_overrides_into_combinations():
    assert compat_hydra.combinations(["grader=a,b", "x=1"]) == [["grader=a", "x=1"], ["grader=b", "x=1"]]
    assert compat_hydra.first_sweep(["x=1", "grader=a,b"]) == ("grader", "grader=a,b")
    assert compat_hydra.first_sweep(["x=1"]) is None
    assert compat_hydra.first_of_each_value(["a=1,2", "b=x,y"]) == [["a=1", "b=x"], ["a=2", "b=x"], ["a=1", "b=y"]]


def test_hydra_app_parses_its_own_flags():
    args = compat_hydra.get_args_parser().parse_args(["--cfg", "job", "x=1"])
    assert (args.cfg, args.overrides) == ("job", ["x=1"])
    assert json.dumps(sorted(vars(args)))  # the flags the command line reads are all there
    for flag in ("run", "multirun", "info", "shell_completion", "config_dir", "hydra_help", "resolve", "package"):
        assert hasattr(args, flag), flag
