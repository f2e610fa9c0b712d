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

from .config import CONF_DIR, register_configs
from .hydra_errors import describe
from .runlog import CONFIG_ERROR_EXIT, config_secrets, redact, scrub_text_file, secret_values

register_configs()
_job_started = False

SUBCOMMANDS: dict[str, str] = {}
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

    ``HYDRA_FULL_ERROR=1`` prints the full trace before that line.
    """
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra then raises its errors instead of printing them
    try:
        hydra_app()
    except SystemExit as exc:
        if not _job_started and exc.code not in (0, None):
            raise SystemExit(CONFIG_ERROR_EXIT) from None
        raise
    except Exception as exc:
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


def main() -> None:
    """``rubric-runner [COMMAND ...]``: a subcommand, or else Hydra overrides for a run."""
    argv = sys.argv[1:]
    if argv and argv[0] in SUBCOMMANDS:
        module_name, function_name = SUBCOMMANDS[argv[0]].split(":")
        command = getattr(importlib.import_module(module_name), function_name)
        sys.exit(command(argv[1:]))
    run_hydra()
