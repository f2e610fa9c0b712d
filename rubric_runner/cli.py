"""Command line: the Hydra app (``python -m rubric_runner``) and the ``rubric-runner`` script."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from . import sweep
from .config import CONF_DIR, register_configs
from .hydra_errors import describe
from .runlog import CONFIG_ERROR_EXIT, config_secrets, redact, saved_overrides, scrub_text_file, secret_values

register_configs()
_job_started = False

SUBCOMMANDS: dict[str, str] = {
    "resume": "rubric_runner.cli:resume",
    "regrade": "rubric_runner.regrade:regrade",
    "report": "rubric_runner.report:main",
    "tools": "rubric_runner.commands:tools",
    "plugins": "rubric_runner.commands:plugins",
    "doctor": "rubric_runner.commands:doctor",
}
"""``rubric-runner NAME ARGS...`` -> ``"module:function"``, imported only when used; returns the exit code."""


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def hydra_app(cfg: DictConfig) -> int:
    """One Hydra job: a single rubric run in the job's output dir."""
    global _job_started
    _job_started = True
    from .runner import run

    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    _scrub_saved_config(hydra_cfg, cfg, overrides)
    result = run(cfg, hydra_cfg.runtime.output_dir, overrides)
    if hydra_cfg.mode == RunMode.RUN:
        sys.exit(result.exit_code)
    if result.status == "interrupted":
        raise KeyboardInterrupt  # Ctrl-C stops the whole sweep, not just this job
    return result.exit_code


def _scrub_saved_config(hydra_cfg: Any, cfg: DictConfig, overrides: list[str]) -> None:
    """Hydra saved the config and overrides before the job ran: take any secret back out of them."""
    secrets = [*config_secrets(OmegaConf.to_container(cfg, resolve=False), overrides), *secret_values()]
    paths = []
    if hydra_cfg.output_subdir:
        paths += Path(hydra_cfg.runtime.output_dir, hydra_cfg.output_subdir).glob("*.yaml")
    if hydra_cfg.mode == RunMode.MULTIRUN:
        paths.append(Path(hydra_cfg.sweep.dir, "multirun.yaml"))
    for path in paths if secrets else []:
        if path.is_file():
            scrub_text_file(path, secrets)


def run_hydra() -> None:
    """Run the Hydra app; a command line Hydra rejects before any job starts exits with 2 and one line.

    ``HYDRA_FULL_ERROR=1`` prints the full trace before that line. A sweep exits with
    ``sweep.finish()``'s code, its summary written even when a job failed (Hydra's sweeper then
    re-raises the job's exception and skips ``on_multirun_end``).
    """
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra then raises its errors instead of printing them
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
    except Exception as exc:
        sweep_code = sweep.finish()
        if sweep_code is not None:  # a job's exception, re-raised by the basic sweeper after the batch
            traceback.print_exc()
            raise SystemExit(sweep_code) from None
        if _job_started:
            raise
        if previous == "1":
            traceback.print_exc()
        args = sys.argv[1:]
        print(f"error: {redact(describe(exc, args), [*config_secrets(None, args), *secret_values()])}", file=sys.stderr)
        raise SystemExit(CONFIG_ERROR_EXIT) from None
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous
    sweep_code = sweep.finish()
    if sweep_code is not None:
        sys.exit(sweep_code)


def resume(argv: list[str]) -> int:
    """``rubric-runner resume RUN_DIR [OVERRIDES...]``: continue a run with its own overrides."""
    saved = saved_overrides(Path(argv[0])) if argv else None
    if saved is None:
        print("usage: rubric-runner resume RUN_DIR [OVERRIDES...]  (RUN_DIR must hold .hydra/overrides.yaml)", file=sys.stderr)
        return CONFIG_ERROR_EXIT
    run_dir = Path(argv[0]).resolve()
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
