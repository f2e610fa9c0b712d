"""Each assumption ``rubric_runner.compat.deepagents`` makes, pinned by name (see ``rubric_runner/compat/deepagents.py``):
deepagents' ``RubricMiddleware``: its state keys, grader source name, metadata key, verdict schema and
``aafter_agent``."""

from __future__ import annotations

import asyncio
import re

import pytest
from support.helpers import verdict

from rubric_runner.compat import deepagents as compat_deepagents
from rubric_runner.models.scripted import ScriptedChatModel


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
    state = asyncio.run(compat_deepagents.grade_once(middleware, [HumanMessage("Write it."), AIMessage("final")], "- c", events.append, {}))
    assert (state.status, state.iterations, len(state.evaluations)) == ("max_iterations_reached", 1, 1)
    assert [e["type"] for e in events] == ["rubric_evaluation_start", "rubric_evaluation_end"]


def test_deepagents_state_keeps_the_frozen_checklist(loop):
    values, _ = loop
    assert compat_deepagents.LoopState.of(values).checklist == ["c"]


def test_deepagents_grades_a_seeded_checklist_as_a_later_pass_does():
    from langchain_core.messages import AIMessage, HumanMessage

    seen = []

    class Grader(ScriptedChatModel):
        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages[-1].text)
            return await super()._agenerate(messages, stop, run_manager, **kwargs)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages[-1].text)
            return super()._generate(messages, stop, run_manager, **kwargs)

    grader = Grader(model="scripted:g", turns=[verdict("satisfied", ("First", True), ("Second", True))])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=1)
    state = asyncio.run(compat_deepagents.grade_once(middleware, [HumanMessage("Write it."), AIMessage("final")], "- a\n- b",
                                         lambda event: None, {}, checklist=["First", "Second"]))
    assert "1. First\n2. Second" in seen[0] and "Return exactly 2 entries" in seen[0]
    assert state.checklist == ["First", "Second"]


def test_deepagents_grader_window_is_the_one_grader_view_counts():
    from deepagents.middleware import _message_eviction, rubric
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    # the notice a large tool result leaves (its template made private after 0.7.11)
    template = getattr(_message_eviction, "_TOO_LARGE_TOOL_MSG", None) or _message_eviction.TOO_LARGE_TOOL_MSG
    notice = template.format(tool_call_id="t1", file_path="/large_tool_results/t1", preview_note="", content_sample="")
    messages = [HumanMessage("q" * 4500)]
    for k in range(20):
        messages += [AIMessage("a" * (3000 + 100 * k), tool_calls=[{"name": "task", "args": {"subagent_type": "researcher"}, "id": f"c{k}"}]),
                     ToolMessage(notice if k == 0 else "r" * 5000, tool_call_id=f"c{k}")]
    view = compat_deepagents.grader_view(messages, "payload")
    shown = rubric._build_grader_transcript(messages).split("\n\n[")
    assert (view["messages"], view["shown"], view["dropped"]) == (41, len(shown), 41 - len(shown))
    assert len(view["cut"]) == sum(chunk.endswith("...(truncated)") for chunk in shown)
    assert view["offloaded"] == ["/large_tool_results/t1"] and view["subagents"] == ["researcher"] * 20


def test_deepagents_takes_the_grader_hooks_the_runner_passes():
    # loop.agent passes grader_middleware= and prepare_messages_for_grader= (0.7.11 on): each must reach the pass
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage, HumanMessage

    seen: dict[str, object] = {}

    class Watch(AgentMiddleware):
        async def awrap_model_call(self, request, handler):
            seen["payload"] = request.messages[0].text
            return await handler(request)

    def prepare(messages):
        seen["prepared"] = len(messages)
        return messages[-1:]

    grader = ScriptedChatModel(model="scripted:g", turns=[verdict("satisfied", ("c", True))])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=1, grader_middleware=[Watch()],
                                                     prepare_messages_for_grader=prepare)
    state = asyncio.run(compat_deepagents.grade_once(middleware, [HumanMessage("Write it."), AIMessage("final")], "- c", lambda e: None, {}))
    assert state.status == "satisfied" and seen["prepared"] == 2
    assert "[assistant] final" in seen["payload"] and "Write it." not in seen["payload"]


def test_deepagents_after_agent_update_applied_is_the_loop_state_and_ended_at_cap_stops_it():
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.runtime import Runtime

    grader = ScriptedChatModel(model="scripted:g", turns=[verdict("needs_revision", ("c", False))])
    middleware = compat_deepagents.rubric_middleware(model=grader, max_iterations=3)
    state = {"messages": [HumanMessage("Write it."), AIMessage("first")], "rubric": "- c", "_rubric_iterations": 0,
             "_current_grading_run_id": "run-1", "_rubric_evaluations": [{"grading_run_id": "run-0", "result": "satisfied"}]}
    update = middleware.after_agent(state, Runtime(stream_writer=lambda event: None))
    assert update["jump_to"] == "model" and update["messages"][0].name == compat_deepagents.GRADER_SOURCE
    loop = compat_deepagents.LoopState.after(state, update)
    assert (loop.status, loop.iterations, loop.grading_run_id) == ("needs_revision", 1, "run-1")
    assert [e["result"] for e in loop.evaluations] == ["needs_revision"]  # the earlier grading run's left out
    ended = compat_deepagents.ended_at_cap(update)
    assert "jump_to" not in ended and "messages" not in ended
    assert compat_deepagents.LoopState.after(state, ended).status == "max_iterations_reached"
    assert compat_deepagents.LoopState.after(state, None) is None and compat_deepagents.LoopState.after(state, {"messages": []}) is None


def test_deepagents_filesystem_backend_refuses_a_path_out_of_its_root_in_resolve_path(tmp_path):
    from deepagents.backends import FilesystemBackend

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside)
    bare = FilesystemBackend(root_dir=root, virtual_mode=True)
    with pytest.raises(ValueError, match="outside root directory"):  # the library lets it through
        bare.write("/out/x.txt", "x")
    confined = compat_deepagents.confined_files()(root_dir=root, virtual_mode=True)
    assert "refused, /out/x.txt is outside its root" in confined.write("/out/x.txt", "x").error
    assert confined.read("/out/x.txt").error and list(outside.iterdir()) == []
    assert confined.write("/in.txt", "x").error is None and (root / "in.txt").read_text() == "x"


def test_deepagents_gives_an_agent_on_a_state_backend_the_files_and_its_tool_reads_and_writes_them(tmp_path):
    """``files_in_state``: each agent's ``FilesystemMiddleware`` (the worker's, a subagent's) declares the state's
    ``files`` for a backend that is a ``StateBackend``, whose file operations stay the ``FilesystemBackend``'s;
    ``send_files`` in a tool goes to the state with the tool's answer, and ``agent_files`` reads it back at once."""
    from deepagents import create_deep_agent
    from deepagents.backends import FilesystemBackend
    from deepagents.backends.utils import create_file_data
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    backend_class = compat_deepagents.files_in_state()
    assert all(getattr(backend_class, name) is getattr(FilesystemBackend, name)
               for name in ("ls", "read", "write", "edit", "delete", "grep", "glob", "upload_files", "download_files"))
    backend = backend_class(root_dir=tmp_path, virtual_mode=True)
    assert "files" in FilesystemMiddleware(backend=backend).state_schema.__annotations__

    @tool
    def touch() -> str:
        """Make /made.txt."""
        compat_deepagents.send_files({"/made.txt": create_file_data("made\n"), "/seed.txt": None})
        return ",".join(sorted(compat_deepagents.agent_files()))

    worker = ScriptedChatModel(model="scripted:w", turns=[{"tool_calls": [{"name": "touch", "args": {}}]}, {"content": "done"}])
    agent = create_deep_agent(model=worker, tools=[touch], backend=backend, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "Make it."}], "files": {"/seed.txt": create_file_data("s\n")}}, config))
    values = agent.get_state(config).values
    assert list(values["files"]) == ["/made.txt"] and values["files"]["/made.txt"]["content"] == "made\n"
    assert next(m for m in values["messages"] if m.type == "tool").content == "/made.txt"
