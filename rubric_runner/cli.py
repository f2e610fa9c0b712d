"""Command line: the Hydra app (``python -m rubric_runner``) and the ``rubric-runner`` script."""

from __future__ import annotations

import importlib
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from .config import CONF_DIR, register_configs
from .runlog import CONFIG_ERROR_EXIT

register_configs()
_job_started = False

SUBCOMMANDS: dict[str, str] = {
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
    return result.exit_code


def run_hydra() -> None:
    """Run the Hydra app; a config Hydra rejects before any job starts exits with 2."""
    try:
        hydra_app()
    except SystemExit as exc:
        if not _job_started and exc.code not in (0, None):
            raise SystemExit(CONFIG_ERROR_EXIT) from None
        raise


def main() -> None:
    """``rubric-runner [COMMAND ...]``: a subcommand, or else Hydra overrides for a run."""
    argv = sys.argv[1:]
    if argv and argv[0] in SUBCOMMANDS:
        module_name, function_name = SUBCOMMANDS[argv[0]].split(":")
        command = getattr(importlib.import_module(module_name), function_name)
        sys.exit(command(argv[1:]))
    run_hydra()
