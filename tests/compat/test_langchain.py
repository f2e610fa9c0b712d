"""Each assumption ``rubric_runner.compat.langchain`` makes, pinned by name (see ``rubric_runner/compat/langchain.py``):
LangChain and LangSmith: the structured-output strategy of a profile, the runtime override for thread hops."""

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
