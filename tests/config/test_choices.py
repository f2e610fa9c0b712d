"""Config groups from the command line: a choice is a name, never a path, and a user's config dir is
searched before the bundled one (a real ``python -m rubric_runner`` each)."""

from __future__ import annotations

import json

import pytest
from support.helpers import SCRIPTED_EVIDENCE, run_cli, scripted_overrides, verdict, write_script

SCRIPTED = ("worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE)
EVIL = "# @package _global_\nrubric: {name: outside, task: t, text: '- c'}\n"


@pytest.mark.parametrize("choice", ["../../evil", "{evil}", "sub/evil", "..", "code,../../evil"])
def test_a_group_choice_with_a_path_part_is_one_line_before_anything_loads_or_is_written(tmp_path, choice):
    (tmp_path / "conf" / "rubric" / "sub").mkdir(parents=True)
    for place in (tmp_path / "evil.yaml", tmp_path / "conf" / "rubric" / "sub" / "evil.yaml"):
        place.write_text(EVIL)
    choice = choice.format(evil=tmp_path / "evil")
    multirun = ["-m"] if "," in choice else []
    done = run_cli(*multirun, "--config-dir", str(tmp_path / "conf"), f"rubric={choice}", *SCRIPTED, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: rubric: ") and "is a path" in lines[0], done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf", "evil.yaml"]  # no outputs/, no run dir anywhere


def test_a_config_key_may_hold_a_path(tmp_path):
    done = run_cli("rubric.text=- a/b ../c", *SCRIPTED, "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 0 and "a/b ../c" in done.stdout, done.stderr


def test_a_users_rubric_of_a_bundled_name_wins_over_the_bundled_one(tmp_path):
    (tmp_path / "mine" / "rubric").mkdir(parents=True)
    (tmp_path / "mine" / "rubric" / "code.yaml").write_text(
        "# @package _global_\nrubric: {name: code-of-mine, task: Say hi., text: '- says hi'}\ngrader: {tools: {}}\n")
    script = write_script(tmp_path / "hi.yaml", [{"content": "hi"}], [verdict("satisfied", ("says hi", True))])
    done = run_cli("--config-dir", "mine", "rubric=code", *scripted_overrides(script), "hydra.run.dir=run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["header"]["rubric"] == {"name": "code-of-mine", "text": "- says hi", "task": "Say hi."}
