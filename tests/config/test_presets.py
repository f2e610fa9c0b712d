"""Every model preset composes in both groups and builds the right LangChain class, offline."""

from __future__ import annotations

import importlib.util
import re

import pytest
import yaml
from support.helpers import compose_config

from rubric_runner.config.validate import validate
from rubric_runner.environment import API_KEY_ENV
from rubric_runner.errors import UsageError
from rubric_runner.models.build import build_chat_model

PRESETS = {
    "sonnet": ("ChatAnthropic", "claude-sonnet-4-6"),
    "haiku": ("ChatAnthropic", "claude-haiku-4-5"),
    "gpt": ("ChatOpenAI", "gpt-5.5"),
    "gemini": ("ChatGoogleGenerativeAI", "gemini-3.6-flash"),
    "glm_openrouter": ("ChatOpenRouter", "z-ai/glm-5.2"),
    "glm_fireworks": ("ChatFireworks", "accounts/fireworks/models/glm-5p2"),
    "glm_baseten": ("ChatBaseten", "zai-org/GLM-5.2"),
    "ollama": ("ChatOllama", "north-mini-code-1.0"),
}


@pytest.fixture
def dummy_keys(monkeypatch):
    for names in API_KEY_ENV.values():
        monkeypatch.setenv(names[0], "dummy-key-for-offline-tests")


def _model_id(model) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value.removeprefix("models/")
    raise AssertionError(f"{type(model).__name__} exposes no model id")


OWN_EXTRA = {"glm_openrouter": ("langchain_openrouter", "openrouter")}
"""Presets whose provider package is in an extra of its own, left out of ``all`` (see pyproject.toml)."""


@pytest.mark.parametrize("role", ["worker", "grader"])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_builds_its_chat_model(preset, role, dummy_keys):
    config = validate(compose_config([f"{role}={preset}"]))
    package, extra = OWN_EXTRA.get(preset, (None, None))
    if package is not None and importlib.util.find_spec(package) is None:
        # without its extra, the preset is one line naming the extra to install
        with pytest.raises(UsageError) as refused:
            build_chat_model(getattr(config, role), role)
        assert (refused.value.key, refused.value.fix) == (f"{role}.model", f"pip install 'rubric_runner[{extra}]'")
        return
    model = build_chat_model(getattr(config, role), role)
    class_name, model_id = PRESETS[preset]
    assert type(model).__name__ == class_name
    assert _model_id(model) == model_id


def test_defaults_are_sonnet_haiku_haiku():
    config = validate(compose_config())
    assert config.worker.model == "anthropic:claude-sonnet-4-6"
    assert config.grader.model == "anthropic:claude-haiku-4-5"
    assert config.rubric.name == "haiku"
    assert config.grader.max_iterations == 3
    assert config.grader.system_prompt is None


def test_any_init_chat_model_string_and_client_settings_pass_through(dummy_keys):
    config = validate(
        compose_config(
            [
                "worker.model=anthropic:claude-opus-4-7",
                "worker.temperature=0.2",
                "worker.max_tokens=1234",
                "worker.timeout=7",
                "worker.max_retries=5",
                "worker.base_url=http://127.0.0.1:9",
            ]
        )
    )
    model = build_chat_model(config.worker, "worker")
    assert _model_id(model) == "claude-opus-4-7"
    assert (model.temperature, model.max_tokens, model.default_request_timeout, model.max_retries) == (0.2, 1234, 7.0, 5)
    assert model.anthropic_api_url == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("preset", "variable"),
    [
        ("sonnet", "ANTHROPIC_API_KEY"),
        ("gpt", "OPENAI_API_KEY"),
        ("gemini", "GOOGLE_API_KEY"),
        ("glm_openrouter", "OPENROUTER_API_KEY"),
        ("glm_fireworks", "FIREWORKS_API_KEY"),
        ("glm_baseten", "BASETEN_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(preset, variable):
    from rubric_runner.errors import UsageError
    from rubric_runner.models.preflight import check_keys

    config = validate(compose_config([f"worker={preset}", "grader=scripted"]))
    with pytest.raises(UsageError) as caught:
        check_keys(config, ("grader", "worker"))
    assert variable in str(caught.value) and "worker=scripted grader=scripted" in str(caught.value)


def test_unreachable_ollama_names_the_base_url():
    from rubric_runner.errors import UsageError
    from rubric_runner.models.preflight import check_server

    config = validate(compose_config(["worker=ollama", "worker.base_url=http://127.0.0.1:9"]))
    with pytest.raises(UsageError) as caught:
        check_server(config.worker, "worker")
    assert "nothing answers at http://127.0.0.1:9" in str(caught.value) and caught.value.key == "worker.base_url"
    assert "start `ollama serve`" in str(caught.value)


def test_prompts_from_the_docs():
    config = validate(compose_config(["rubric=code", "prompt/grader=code_reviewer"]))
    assert config.worker.system_prompt.startswith("You are a careful Python engineer.")
    assert config.grader.system_prompt == "You are a code reviewer grading generated code against a rubric."
    assert list(config.grader.tools) == ["run_test_suite"]


def test_every_model_preset_is_a_worker_and_a_grader_with_a_price_line():
    """Adding a preset: conf/model/X.yaml, its two one-line includes and a line in conf/prices.yaml."""
    from rubric_runner.paths import CONF_DIR

    models = sorted(path.stem for path in (CONF_DIR / "model").glob("*.yaml"))
    assert "haiku" in models
    for group in ("worker", "grader"):
        for name in models:
            include = CONF_DIR / group / f"{name}.yaml"
            expected = f"defaults:\n  - /model/{name}@_here_\n"
            assert include.is_file() and include.read_text() == expected, f"write {include} holding:\n{expected}"
        strays = sorted({path.stem for path in (CONF_DIR / group).glob("*.yaml")} - set(models))
        assert not strays, f"conf/{group}/ has presets with no conf/model/ file: {strays}"
    prices = (CONF_DIR / "prices.yaml").read_text()
    for name in models:
        model = yaml.safe_load((CONF_DIR / "model" / f"{name}.yaml").read_text())["model"]
        if not model.startswith("scripted:"):
            assert re.search(rf"^(# )?{re.escape(model)}: \{{input: ", prices, re.MULTILINE), (
                f"add a price line for {model} to conf/prices.yaml ('# {model}: {{input: ..., output: ...}}' if unknown)")
