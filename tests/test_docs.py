"""The README documents every plugin hook (in its "Writing a plugin" section) and every config key."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import get_type_hints

import pytest

from conftest import ROOT
from rubric_runner import hookspecs
from rubric_runner.config import Config

HOOKS = [name for name, obj in vars(hookspecs).items() if hasattr(obj, "rubric_runner_spec")]


def _plugin_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Writing a plugin\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '## Writing a plugin' section"
    return match.group(1)


def test_there_are_hooks():
    assert "register_tools" in HOOKS  # the introspection finds the hookspecs


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    signature = f"{hook}({', '.join(inspect.signature(getattr(hookspecs, hook)).parameters)})"
    assert f"### {signature}\n" in _plugin_section()


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_takes_keywords_and_says_what_it_is_in_one_line(hook):
    spec = getattr(hookspecs, hook)
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in inspect.signature(spec).parameters.values())
    assert spec.__doc__ and "\n" not in spec.__doc__.strip()


def _schema_keys(schema: type, prefix: str = "") -> list[str]:
    keys = []
    for name, hint in get_type_hints(schema).items():
        keys += _schema_keys(hint, f"{prefix}{name}.") if dataclasses.is_dataclass(hint) else [f"{prefix}{name}"]
    return keys


@pytest.mark.parametrize("key", _schema_keys(Config))
def test_config_key_is_in_the_key_table(key):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("| key | meaning |\n", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"`([^`]+)`", table))
    role, _, field = key.partition(".")
    assert key in documented or (role in ("worker", "grader") and f"*.{field}" in documented)
