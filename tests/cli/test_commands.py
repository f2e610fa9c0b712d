"""``rubric-runner tools`` and ``rubric-runner plugins``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rubric_runner.cli import run_command


def test_tools_console_script_lists_every_tool_with_its_origin_and_settings(tmp_path):
    script = Path(sys.executable).with_name("rubric-runner")
    proc = subprocess.run([str(script), "tools"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "run_test_suite\n  plugin builtin_tools, package rubric_runner 0.1.0\n  Run the task's test suite" in out
    assert "    suite: Path | None (default None) - a YAML case table" in out
    assert "    cases: list[dict[str, Any]] | None (default None) - inline case table" in out
    assert "    wall_seconds: float (default 10.0) - wall-clock limit" in out
    assert "count_syllables\n  plugin syllables, package rubric_runner_syllables 0.1.0\n  Count the lines of a poem" in out
    assert "    pattern: list[int] | None (default None) - expected syllables per line" in out
    assert "text_stats\n  plugin textstats, package rubric_runner_textstats 0.1.0" in out
    assert "    required_terms: list[str] | None (default None) - terms the text must mention" in out
    assert proc.stderr == ""


def test_plugins_lists_loaded_plugins_with_versions(capsys):
    assert run_command(["plugins"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "builtin_tools rubric_runner 0.1.0",
        "reports rubric_runner 0.1.0",
        "syllables rubric_runner_syllables 0.1.0",
        "textstats rubric_runner_textstats 0.1.0",
    ]


def test_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        run_command(["tools", "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: rubric-runner tools")
    with pytest.raises(SystemExit) as exc:
        run_command(["plugins", "--verbose"])
    assert exc.value.code == 2
    assert "rubric-runner plugins: unexpected arguments --verbose" in capsys.readouterr().err


def test_usage_lines_show_the_overrides_as_optional(capsys):
    usages = {"resume": "[-h] [--config-dir DIR] [--trust-run-dir] RUN_DIR [OVERRIDE ...]",
              "continue": "[-h] [--task ID] [--repeat K] [--config-dir DIR] [--trust-run-dir] RUN_DIR MESSAGE [OVERRIDE ...]",
              "regrade": "[-h] [-m] [--repeats N] [--min-agreement RATE] [--config-dir DIR] [--trust-run-dir] RUN_DIR [OVERRIDE ...]"}
    for command, usage in usages.items():
        with pytest.raises(SystemExit):
            run_command([command, "--help"])
        assert capsys.readouterr().out.startswith(f"usage: rubric-runner {command} {usage}\n"), command
        with pytest.raises(SystemExit) as exc:
            run_command([command])
        missing = "RUN_DIR, MESSAGE" if command == "continue" else "RUN_DIR"
        assert exc.value.code == 2 and f"the following arguments are required: {missing} (" in capsys.readouterr().err
    run_command(["--help"])
    out = capsys.readouterr().out
    assert " 4 below\n            sweep.fail_under (or report --fail-under), 5 stopped by a budget" in out


def _imported_after(statements: str, modules: tuple[str, ...]) -> str:
    """Which of ``modules`` a fresh interpreter has imported after running ``statements``, as a printed list."""
    code = f"import sys\n{statements}\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[-1]


def test_listing_imports_no_agent_or_provider_code():
    statements = ("from rubric_runner import cli\nsys.argv = ['rubric-runner', 'tools']\n"
                  "try:\n    cli.main()\nexcept SystemExit:\n    pass")
    assert _imported_after(statements, ("deepagents", "langgraph", "langchain_anthropic")) == "[]"


def test_help_and_cfg_import_no_record_models_or_agent_code():
    statements = ("from rubric_runner.cli import run_command\n"
                  "assert run_command(['--help']) == 0 and run_command(['--cfg', 'job']) == 0")
    assert _imported_after(statements, ("rubric_runner.records.models", "pydantic.main", "deepagents", "langgraph")) == "[]"
