"""The Hydra app: runs and sweeps from the command line, with Hydra driven here rather than by
``@hydra.main``, so that every error before a job starts is one line and exit 2, and the sweep's
summary callback stays within reach until its exit code is known.

Jobs run ``job`` (in this process, or in the launcher's workers, which import this module).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra import version
from hydra._internal.callbacks import Callbacks
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_automatic_config_search_path, get_args_parser
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.core.utils import run_job
from hydra.errors import SearchPathException
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf

from ..config.compose import register_configs
from ..config.hydra_errors import describe
from ..errors import ConfigError
from ..paths import CONF_DIR
from ..records import ExitCode, Status
from ..redaction import config_secrets, redact, scrub_text_file, secret_values

if TYPE_CHECKING:
    from .sweep import SweepSummary

CONFIG_NAME = "config"
TASK_NAME = "cli"
"""``hydra.job.name``."""


def job(cfg: DictConfig, claimed: bool = False) -> int:
    """One Hydra job: a single rubric run in the job's output dir; returns its exit code.

    ``claimed``: the run dir was claimed before Hydra wrote its files there (a single run).
    """
    from ..loop.launch import RunDirInUse, execute
    from ..loop.signals import StopRequest

    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    _scrub_saved_config(hydra_cfg, cfg, overrides)
    sweep_dir = Path(str(hydra_cfg.sweep.dir)).absolute() if hydra_cfg.mode == RunMode.MULTIRUN else None
    try:
        with StopRequest().installed() as stop:
            record = execute(cfg, hydra_cfg.runtime.output_dir, overrides, stop=stop, claimed=claimed, sweep_dir=sweep_dir)
    except RunDirInUse as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return ExitCode.USAGE
    if hydra_cfg.mode == RunMode.MULTIRUN and record.status is Status.INTERRUPTED:
        raise KeyboardInterrupt  # Ctrl-C stops the whole sweep, not just this job
    return int(record.exit_code)


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


def _usage_error(exc: BaseException, argv: list[str]) -> int:
    """One line naming the key and the fix (after Hydra's full trace with ``HYDRA_FULL_ERROR=1``); exit 2."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(exc)
    line = str(exc) if isinstance(exc, ConfigError) else describe(exc, argv)
    print(f"error: {redact(line, [*config_secrets(None, argv), *secret_values()])}", file=sys.stderr, flush=True)
    return ExitCode.USAGE


def _single_run(hydra: Hydra, overrides: list[str], argv: list[str]) -> int:
    """Compose, claim the run dir, run the job (as ``Hydra.run`` does, with the claim in between)."""
    from ..loop.launch import claim_run_dir

    try:
        cfg = hydra.compose_config(CONFIG_NAME, overrides, with_log_configuration=True, run_mode=RunMode.RUN)
        cfg.hydra.mode = RunMode.RUN
        claim_run_dir(Path(str(cfg.hydra.run.dir)), bool(OmegaConf.select(cfg, "run.resume")))
    except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here
        return _usage_error(exc, argv)
    callbacks = Callbacks(cfg)
    callbacks.on_run_start(config=cfg, config_name=CONFIG_NAME)
    ret = run_job(
        hydra_context=HydraContext(config_loader=hydra.config_loader, callbacks=callbacks),
        task_function=functools.partial(job, claimed=True), config=cfg,
        job_dir_key="hydra.run.dir", job_subdir_key=None, configure_logging=True,
    )
    callbacks.on_run_end(config=cfg, config_name=CONFIG_NAME, job_return=ret)
    return ret.return_value  # re-raises the job's exception, if it raised one


def _job_overrides(task_overrides: list[str]) -> list[list[str]]:
    """Enough jobs' overrides to meet every value of every swept key once (each other key at its first value)."""
    parsed = OverridesParser.create().parse_overrides(task_overrides)
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    swept = [(o.get_key_element(), list(o.sweep_string_iterator())) for o in parsed if o.is_sweep_override()]
    firsts = [f"{key}={values[0]}" for key, values in swept if values]
    jobs = [[*fixed, *firsts]]
    for index, (key, values) in enumerate(swept):
        for value in values[1:]:
            jobs.append([*fixed, *firsts[:index], f"{key}={value}", *firsts[index + 1:]])
    return jobs


def _check_sweep(hydra: Hydra, cfg: DictConfig, summary: SweepSummary | None) -> None:
    """Before any job: every value of the sweep composes, a USD budget has a price for every model, the
    sweep's own settings are sound, and the sweep dir holds no other sweep's runs (unless resumed). Raises
    what a single run would."""
    from ..loop.budgets import check_usd_prices
    from ..records import find_run_dirs

    task_overrides = OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False)
    for overrides in _job_overrides(task_overrides):
        check_usd_prices(hydra.config_loader.load_sweep_config(cfg, overrides))
    if summary is not None:
        summary.begin(cfg)
    sweep_dir = Path(str(cfg.hydra.sweep.dir))
    if find_run_dirs(sweep_dir) and sweep_dir.is_dir() and not OmegaConf.select(cfg, "run.resume"):
        raise ConfigError("hydra.sweep.dir", f"{sweep_dir} already holds the runs of another sweep",
                          "leave hydra.sweep.dir unset for a new dir, or add run.resume=true to continue that sweep")


def _sweep(hydra: Hydra, overrides: list[str], argv: list[str]) -> int:
    """Compose and check the sweep, run it (as ``Hydra.multirun`` does), and conclude it whatever happened."""
    from .sweep import SweepSummary

    try:
        cfg = hydra.compose_config(CONFIG_NAME, overrides, with_log_configuration=True, run_mode=RunMode.MULTIRUN)
        callbacks = Callbacks(cfg)
        summary = next((c for c in callbacks.callbacks if isinstance(c, SweepSummary)), None)
        _check_sweep(hydra, cfg, summary)
    except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here
        return _usage_error(exc, argv)
    callbacks.on_multirun_start(config=cfg, config_name=CONFIG_NAME)
    conclude = summary.conclude if summary is not None else (lambda interrupted=False: ExitCode.SATISFIED)
    try:
        sweeper = Plugins.instance().instantiate_sweeper(
            config=cfg, hydra_context=HydraContext(config_loader=hydra.config_loader, callbacks=callbacks), task_function=job,
        )
        sweeper.sweep(arguments=OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False))
        callbacks.on_multirun_end(config=cfg, config_name=CONFIG_NAME)
    except KeyboardInterrupt:
        return conclude(interrupted=True)
    except Exception:  # a job's exception, re-raised by the sweeper after its batch: the summary still gets written
        traceback.print_exc()
        return conclude()
    return conclude()


def _hydra(args: argparse.Namespace) -> Hydra:
    search_path = create_automatic_config_search_path(None, None, str(CONF_DIR))
    if args.config_dir is not None:
        config_dir = os.path.abspath(args.config_dir)
        if not os.path.isdir(config_dir):
            raise SearchPathException(f"Additional config directory '{config_dir}' not found")
        search_path.prepend(provider="command-line", path=f"file://{config_dir}", anchor=SearchPathQuery(provider="schema"))
    return Hydra.create_main_hydra2(task_name=TASK_NAME, config_search_path=search_path)


def run_hydra(argv: list[str]) -> int:
    """``rubric-runner [HYDRA FLAGS] OVERRIDES...``: a run, a sweep (``-m``), or Hydra's ``--cfg``,
    ``--info``, ``--hydra-help``, ``--shell-completion``; returns the exit code."""
    version.setbase("1.3")
    register_configs()
    parser = get_args_parser()
    args = parser.parse_args(argv)
    commands = args.run + (args.cfg is not None) + args.multirun + args.shell_completion + (args.info is not None)
    if commands > 1 or args.experimental_rerun is not None or (args.resolve and args.cfg is None):
        return _usage_error(ValueError("use one of --run, --multirun, --cfg (with --resolve), --info, --shell-completion"), argv)
    overrides = list(args.overrides)
    try:
        hydra = _hydra(args)
    except Exception as exc:
        return _usage_error(exc, argv)
    try:
        if args.hydra_help or args.cfg or args.info or args.shell_completion:
            try:
                if args.hydra_help:
                    hydra.hydra_help(config_name=CONFIG_NAME, args_parser=parser, args=args)
                elif args.cfg:
                    hydra.show_cfg(config_name=CONFIG_NAME, overrides=overrides, cfg_type=args.cfg, package=args.package,
                                   resolve=args.resolve)
                elif args.info:
                    hydra.show_info(args.info, config_name=CONFIG_NAME, overrides=overrides)
                else:
                    hydra.shell_completion(config_name=CONFIG_NAME, overrides=overrides)
            except Exception as exc:
                return _usage_error(exc, argv)
            return ExitCode.SATISFIED
        if args.multirun or hydra.get_mode(config_name=CONFIG_NAME, overrides=overrides) == RunMode.MULTIRUN:
            return _sweep(hydra, [*overrides, "hydra.mode=MULTIRUN"], argv)
        return _single_run(hydra, [*overrides, "hydra.mode=RUN"], argv)
    finally:
        GlobalHydra.instance().clear()


def resume(args: argparse.Namespace) -> int:
    """``rubric-runner resume RUN_DIR [OVERRIDES...]``: continue a run (or a follow-up turn) with its own overrides."""
    from ..records import RESULT_FILE, read_record, saved_overrides

    record = read_record(args.run_dir / RESULT_FILE)
    if record is not None and record.turn:
        from .follow_up import resume_turn

        return resume_turn(args.run_dir, record, list(args.overrides))
    kept = [override for override in saved_overrides(args.run_dir) or [] if not override.startswith("run.resume=")]
    return run_hydra([*kept, *args.overrides, f"hydra.run.dir={args.run_dir}", "run.resume=true"])
