"""Each assumption ``rubric_runner.compat.deepagents`` makes, pinned by name (see ``rubric_runner/compat/deepagents.py``):
deepagents' ``RubricMiddleware``: its state keys, grader source name, metadata key, verdict schema and
``after_agent``."""

from __future__ import annotations

import re

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
    state = compat_deepagents.grade_once(middleware, [HumanMessage("Write it."), AIMessage("final")], "- c", events.append, {})
    assert (state.status, state.iterations, len(state.evaluations)) == ("max_iterations_reached", 1, 1)
    assert [e["type"] for e in events] == ["rubric_evaluation_start", "rubric_evaluation_end"]
