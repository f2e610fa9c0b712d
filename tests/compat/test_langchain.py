"""Each assumption ``rubric_runner.compat.langchain`` makes, pinned by name (see ``rubric_runner/compat/langchain.py``):
LangChain and LangSmith: the structured-output strategy of a profile, the runtime override for thread hops,
messages serialized as ``messages_to_dict`` gives them."""

from __future__ import annotations

from rubric_runner.compat import langchain as compat_langchain


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


def test_langchain_messages_serialize_as_messages_to_dict_gives_them():
    import json

    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        messages_from_dict,
        messages_to_dict,
    )
    from pydantic_core import to_json

    messages = [
        SystemMessage("be brief"),
        HumanMessage([{"type": "text", "text": "count <the> syllables"}], name="grader", additional_kwargs={"lc_source": "x"}),
        AIMessage("", tool_calls=[{"name": "count_syllables", "args": {"text": "an old pond", "lines": [1, 2.5]}, "id": "c1"}],
                  usage_metadata={"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}, response_metadata={"model_name": "m"}),
        ToolMessage('{"syllables": 4}', tool_call_id="c1", name="count_syllables", status="error", artifact={"raw": [4]}),
        AIMessage("an old pond \u00e9", id="run-1"),
    ]
    written = json.loads(to_json(compat_langchain.transcript_messages(messages), fallback=str))
    assert written == json.loads(json.dumps(messages_to_dict(messages)))
    assert messages_from_dict(written) == messages
