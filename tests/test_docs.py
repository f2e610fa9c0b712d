"""The README documents every plugin hook (in its "Writing a plugin" section)."""

from __future__ import annotations

import inspect
import re

import pytest

from conftest import ROOT
from rubric_runner import hookspecs

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
