"""Plugin packages built in temp dirs, installed with pip, used by the runner with no change to the core.

Both are uninstalled afterwards. One is the README's "Writing a plugin" example, exactly as written
there (entry point ``wordcount``). The other has four entry points: ``throwaway`` registers ``shout``
(with a setting; also as ``yell``) and a ``text_stats`` that collides with the textstats plugin's;
``throwaway_broken`` fails to import, ``throwaway_typo`` implements a hook that does not exist, and
``throwaway_bad`` registers something that is not a tool.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

import readme
from conftest import (
    BUNDLED_PLUGINS,
    ROOT,
    compose_config,
    read_events,
    run_cli,
    scripted_overrides,
    verdict,
    write_script,
)
from rubric_runner.runner import execute as run

PACKAGE = "rr-throwaway-plugin"
BROKEN = {
    "throwaway_bad": "register_tools failed: TypeError: 'not a tool' is not a tool",
    "throwaway_broken": "ImportError: broken on purpose",
    "throwaway_typo": "PluginValidationError: unknown hook 'register_tool' in plugin",
}
WITH_THROWAWAY = ",".join([BUNDLED_PLUGINS, "throwaway", "wordcount", *BROKEN])
FILES = {
    "pyproject.toml": f"""
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{PACKAGE}"
        version = "1.2.3"
        dependencies = ["rubric_runner"]

        [project.entry-points.rubric_runner]
        throwaway = "rr_throwaway"
        throwaway_broken = "rr_throwaway.broken"
        throwaway_typo = "rr_throwaway.typo"
        throwaway_bad = "rr_throwaway.bad"

        [tool.hatch.build.targets.wheel]
        packages = ["rr_throwaway"]
    """,
    "rr_throwaway/__init__.py": '''
        """A throwaway rubric_runner plugin."""

        from typing import Annotated

        from langchain_core.tools import InjectedToolArg, tool

        from rubric_runner import hookimpl


        @tool
        def shout(text: str, suffix: Annotated[str, InjectedToolArg] = "!") -> str:
            """Upper-case the text and add the configured suffix."""
            return text.upper() + suffix


        @tool
        def text_stats(text: str) -> dict:
            """Count characters (its name collides with the textstats plugin's tool)."""
            return {"chars": len(text)}


        @hookimpl
        def register_tools(register):
            register(shout)
            register(shout, name="yell")
            register(text_stats)
    ''',
    "rr_throwaway/broken.py": 'raise ImportError("broken on purpose")\n',
    "rr_throwaway/typo.py": """
        from rubric_runner import hookimpl


        @hookimpl
        def register_tool(register):
            pass
    """,
    "rr_throwaway/bad.py": """
        from rubric_runner import hookimpl


        @hookimpl
        def register_tools(register):
            register("not a tool")
    """,
}


def readme_example() -> dict[str, str]:
    """The package files of the README's plugin example (its code blocks that start with ``# <path>``)."""
    return {path: text for path, text in readme.files("Writing a plugin").items() if not path.endswith(".yaml")}


def _write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``pip install`` both packages into the running environment; ``pip uninstall`` them afterwards."""
    throwaway, example = tmp_path_factory.mktemp("throwaway"), tmp_path_factory.mktemp("example")
    _write(throwaway, FILES)
    files = readme_example()
    assert sorted(files) == ["pyproject.toml", "rubric_runner_wordcount/__init__.py"]
    _write(example, files)
    _pip("install", "--quiet", str(throwaway), str(example))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        _pip("uninstall", "--yes", "--quiet", PACKAGE, "rubric-runner-wordcount")


@pytest.fixture
def enabled(installed, monkeypatch):
    monkeypatch.setenv("RUBRIC_RUNNER_PLUGINS", WITH_THROWAWAY)


@pytest.mark.usefixtures("enabled")
def test_tools_command_lists_the_installed_tool(tmp_path):
    proc = run_cli("tools", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "shout\n  plugin throwaway, package rr-throwaway-plugin 1.2.3\n  Upper-case the text" in proc.stdout
    assert "    suffix: str (default '!')" in proc.stdout
    assert "word_count\n  plugin wordcount, package rubric-runner-wordcount 0.1.0\n  Count the words" in proc.stdout
    assert "    limit: int (default 100) - most words allowed" in proc.stdout
    for qualified in ("textstats/text_stats", "throwaway/text_stats"):
        assert f"{qualified}  (name shared with another plugin)" in proc.stdout
    assert "yell\n  plugin throwaway, package rr-throwaway-plugin 1.2.3" in proc.stdout
    for name, error in BROKEN.items():
        assert f"plugin {name!r} failed to load: {error}" in proc.stderr


@pytest.mark.usefixtures("enabled")
def test_plugins_command_lists_versions_and_the_failure(tmp_path):
    proc = run_cli("plugins", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert "throwaway rr-throwaway-plugin 1.2.3" in lines
    assert "syllables rubric_runner_syllables 0.1.0" in lines
    for name, error in BROKEN.items():
        assert any(line.startswith(f"{name} FAILED: {error}") for line in lines), name


@pytest.mark.usefixtures("enabled")
def test_a_run_uses_the_installed_tool_from_config(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"content": "spring rain"}],
        grader=[
            {"tool_calls": [{"name": "shout", "args": {"text": "spring rain"}}]},
            {"tool_calls": [{"name": "word_count", "args": {"text": "spring rain"}}]},
            verdict("satisfied", ("The theme is spring", True)),
        ],
    )
    run_dir = tmp_path / "run"
    proc = run_cli(
        "worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}",
        "+grader.tools.shout={suffix: '?!'}", "+grader.tools.word_count={limit: 1}", f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: plugin 'throwaway_broken' not loaded: ImportError: broken on purpose" in proc.stderr
    outputs = {e["tool"]: e["output"] for e in read_events(run_dir) if e["event"] == "tool_call_end"}
    assert outputs == {"shout": "SPRING RAIN?!", "word_count": '{"words": 2, "within_limit": false}'}


@pytest.mark.usefixtures("enabled")
def test_a_shared_tool_name_needs_the_qualified_name(tmp_path):
    overrides = scripted_overrides(ROOT / "rubric_runner" / "data" / "scripts" / "summary.yaml", "rubric=summary")
    result = run(compose_config(overrides), tmp_path / "ambiguous", overrides)
    assert (result.status, result.exit_code, result.error.key) == ("error", 2, "grader.tools.text_stats")
    assert "tool 'text_stats' is provided by plugins 'textstats' and 'throwaway'" in result.error.message
    assert "name it as textstats/text_stats or throwaway/text_stats" in result.error.message

    qualified = [
        *overrides,
        "~grader.tools.text_stats",
        "+grader.tools={textstats/text_stats: {required_terms: [light, chlorophyll]}}",
    ]
    result = run(compose_config(qualified), tmp_path / "qualified", qualified)
    assert result.status == "satisfied", result.error
    ends = [e for e in read_events(tmp_path / "qualified") if e["event"] == "tool_call_end"]
    assert ends and all('"missing_terms"' in e["output"] for e in ends)


def test_without_the_env_var_every_installed_plugin_loads(installed, monkeypatch):
    from rubric_runner.plugins import Plugins
    from rubric_runner.tools import ToolRegistry

    monkeypatch.delenv("RUBRIC_RUNNER_PLUGINS")
    plugins = Plugins()
    assert {"builtin_tools", "syllables", "textstats", "throwaway", "wordcount"} <= set(plugins.info)
    assert sorted(f.name for f in plugins.failures) == ["throwaway_broken", "throwaway_typo"]
    registry = ToolRegistry(plugins)
    assert sorted(f.name for f in plugins.failures) == sorted(BROKEN)
    assert registry.entries["throwaway/yell"].tool.name == "yell"  # the name the model sees
    assert registry.find("shout", "grader.tools.shout").package == PACKAGE
