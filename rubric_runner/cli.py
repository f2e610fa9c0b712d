"""Command line: the Hydra app (``python -m rubric_runner``) and the ``rubric-runner`` script."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import yaml

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from . import sweep
from .config import CONF_DIR, register_configs
from .runlog import CONFIG_ERROR_EXIT

register_configs()
_job_started = False

SUBCOMMANDS: dict[str, str] = {
    "resume": "rubric_runner.cli:resume",
    "regrade": "rubric_runner.regrade:regrade",
    "report": "rubric_runner.report:main",
    "tools": "rubric_runner.commands:tools",
    "plugins": "rubric_runner.commands:plugins",
}
"""``rubric-runner NAME ARGS...`` -> ``"module:function"``, imported only when used; returns the exit code."""


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def hydra_app(cfg: DictConfig) -> int:
    """One Hydra job: a single rubric run in the job's output dir."""
    global _job_started
    _job_started = True
    from .runner import run

    hydra_cfg = HydraConfig.get()
    result = run(cfg, hydra_cfg.runtime.output_dir, list(hydra_cfg.overrides.task))
    if hydra_cfg.mode == RunMode.RUN:
        sys.exit(result.exit_code)
    if result.status == "interrupted":
        raise KeyboardInterrupt  # Ctrl-C stops the whole sweep, not just this job
    return result.exit_code


def run_hydra() -> None:
    """Run the Hydra app; a config Hydra rejects before any job starts exits with 2.

    A sweep exits with ``sweep.finish()``'s code, its summary written even when a job failed
    (Hydra's sweeper then re-raises the job's exception and skips ``on_multirun_end``).
    """
    try:
        hydra_app()
    except SystemExit as exc:
        sweep_code = sweep.finish()
        if sweep_code is not None:
            raise SystemExit(sweep_code) from None
        if not _job_started and exc.code not in (0, None):
            raise SystemExit(CONFIG_ERROR_EXIT) from None
        raise
    except KeyboardInterrupt:
        sweep_code = sweep.finish(interrupted=True)
        if sweep_code is None:
            raise
        raise SystemExit(sweep_code) from None
    sweep_code = sweep.finish()
    if sweep_code is not None:
        sys.exit(sweep_code)


def resume(argv: list[str]) -> int:
    """``rubric-runner resume RUN_DIR [OVERRIDES...]``: continue a run with its own overrides."""
    if not argv or not (Path(argv[0]) / ".hydra" / "overrides.yaml").is_file():
        print("usage: rubric-runner resume RUN_DIR [OVERRIDES...]  (RUN_DIR must hold .hydra/overrides.yaml)", file=sys.stderr)
        return CONFIG_ERROR_EXIT
    run_dir = Path(argv[0]).resolve()
    saved = yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text(encoding="utf-8")) or []
    kept = [override for override in saved if not override.startswith("run.resume=")]
    sys.argv = [sys.argv[0], *kept, *argv[1:], f"hydra.run.dir={run_dir}", "run.resume=true"]
    run_hydra()
    return 0


HELP = """rubric_runner: run deepagents' RubricMiddleware loop from config.

usage: python -m rubric_runner [GROUP=OPTION ...] [KEY=VALUE ...]   (or: rubric-runner ...)
       python -m rubric_runner -m worker=sonnet,gpt rubric=code,haiku   (a sweep)
       rubric-runner COMMAND ...                                        ({commands})

config groups (conf/):
{groups}

  --cfg job     print the composed config without running
  --hydra-help  Hydra's own options
exit codes: 0 satisfied, 1 unsatisfied, 2 bad config or usage, 3 grader or runtime error, 130 interrupted
"""


def config_groups() -> dict[str, list[str]]:
    """Each selectable config group under conf/ and its options (read from the files)."""
    groups = {}
    for folder in sorted(p for p in CONF_DIR.rglob("*") if p.is_dir()):
        name = folder.relative_to(CONF_DIR).as_posix()
        options = sorted(f.stem for f in folder.glob("*.yaml"))
        if options and not name.startswith(("hydra", "model")):
            groups[name] = options
    return groups


def print_help() -> None:
    """Usage, groups and options; read from conf/ directly, so it prints at once."""
    groups = "\n".join(f"  {name:<15} {', '.join(options)}" for name, options in config_groups().items())
    print(HELP.format(groups=groups, commands=", ".join(sorted(SUBCOMMANDS))))


def main() -> None:
    """``rubric-runner [COMMAND ...]``: a subcommand, or else Hydra overrides for a run."""
    argv = sys.argv[1:]
    if argv and argv[0] in SUBCOMMANDS:
        module_name, function_name = SUBCOMMANDS[argv[0]].split(":")
        command = getattr(importlib.import_module(module_name), function_name)
        sys.exit(command(argv[1:]))
    if "--help" in argv or "-h" in argv:
        print_help()
        return
    run_hydra()
