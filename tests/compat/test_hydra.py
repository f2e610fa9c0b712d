"""Each assumption ``rubric_runner.compat.hydra`` makes, pinned by name (see ``rubric_runner/compat/hydra.py``):
Hydra: composing with config dirs, the command line's config dirs, sweep combinations, the app's flags, a failed job's exception."""

from __future__ import annotations

import json

from rubric_runner.compat import hydra as compat_hydra
from rubric_runner.paths import CONF_DIR


def test_hydra_composes_with_config_dirs_searched_before_the_packages_own(tmp_path):
    from rubric_runner.config.compose import register_configs

    (tmp_path / "rubric").mkdir()
    for name in ("code", "mine"):
        (tmp_path / "rubric" / f"{name}.yaml").write_text(f"# @package _global_\nrubric: {{name: {name}-of-mine, text: '- c', task: t}}\n")
    register_configs()
    assert compat_hydra.load([str(tmp_path)], ["rubric=mine"]).rubric.name == "mine-of-mine"  # a preset of the user's
    assert compat_hydra.load([str(tmp_path)], ["rubric=code"]).rubric.name == "code-of-mine"  # the user's comes first
    assert compat_hydra.load([], ["rubric=code"]).rubric.name == "code"
    search = [(entry.provider, entry.path) for entry in compat_hydra.search_path([str(tmp_path)]).get_path()]
    assert search[1:3] == [("command-line", f"file://{tmp_path}"), ("main", str(CONF_DIR))]


def test_hydra_reports_the_command_lines_config_dirs(tmp_path):
    from omegaconf import OmegaConf

    hydra_node = OmegaConf.create({"runtime": {"config_sources": [
        {"path": "hydra.conf", "schema": "pkg", "provider": "hydra"},
        {"path": str(CONF_DIR), "schema": "file", "provider": "main"},
        {"path": str(tmp_path), "schema": "file", "provider": "command-line"},
    ]}})
    assert compat_hydra.config_dirs_of(hydra_node) == [str(tmp_path)]


def test_hydra_splits_sweep_overrides_into_combinations():
    assert compat_hydra.combinations(["grader=a,b", "x=1"]) == [["grader=a", "x=1"], ["grader=b", "x=1"]]
    assert compat_hydra.first_sweep(["x=1", "grader=a,b"]) == ("grader", "grader=a,b")
    assert compat_hydra.first_sweep(["x=1"]) is None
    assert compat_hydra.first_of_each_value(["a=1,2", "b=x,y"]) == [["a=1", "b=x"], ["a=2", "b=x"], ["a=1", "b=y"]]


def test_hydra_app_parses_its_own_flags():
    args = compat_hydra.get_args_parser().parse_args(["--cfg", "job", "x=1"])
    assert (args.cfg, args.overrides) == ("job", ["x=1"])
    assert json.dumps(sorted(vars(args)))  # the flags the command line reads are all there
    for flag in ("run", "multirun", "info", "shell_completion", "config_dir", "hydra_help", "resolve", "package"):
        assert hasattr(args, flag), flag


def test_hydra_job_return_holds_a_failed_jobs_exception():
    from hydra.core.utils import JobReturn, JobStatus

    raised = RuntimeError("job failed")
    job_return = JobReturn(status=JobStatus.FAILED, _return_value=raised)
    assert compat_hydra.job_exception(job_return) is raised
