"""Runs and sweeps from the command line: ``rubric-runner [HYDRA FLAGS] OVERRIDES...``.

A single run is one launch (``loop.launch``). A sweep (``-m``) is Hydra's: its sweeper and launcher call
``job`` once per combination, in this process or in the launcher's workers (which import this module),
and each job is a launch of the config Hydra composed for it. Hydra is driven here rather than by
``@hydra.main``, so that every error before a job starts is one line and exit 2, and the sweep's summary
callback stays within reach until its exit code is known.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hydra.conf import HydraConf
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from ..compat import hydra as compat_hydra
from ..config.compose import check_group_choices, register_configs
from ..config.hydra_errors import usage_error
from ..environment import process_tweaks
from ..errors import UsageError, unwritable
from ..observe.console import write_line
from ..records.status import ExitCode, Status
from ..redaction import config_secrets, redact, scrub_text_file, secret_values

if TYPE_CHECKING:
    from .sweep import SweepSummary


_sweep_pid: int | None = None
"""The process that drives the sweep: its jobs run in it with the basic launcher, elsewhere with others."""


def job(cfg: DictConfig) -> int:
    """One job of a sweep: a launch of the config Hydra composed for it, in its output dir; its exit code."""
    from ..loop.launch import launch
    from ..loop.request import Launch
    from ..loop.signals import SWEEP_STOP_FILE, StopRequest
    from ..records import ConfigSources

    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    _scrub_saved_config(hydra_cfg, cfg, overrides)
    sources = ConfigSources(overrides=overrides, config_dirs=compat_hydra.config_dirs_of(hydra_cfg))
    sweep_dir = Path(str(hydra_cfg.sweep.dir)).absolute()
    try:
        with process_tweaks(), _in_start_dir(hydra_cfg), StopRequest(sweep_dir / SWEEP_STOP_FILE).installed() as stop:
            record = launch(Launch(sources, run_dir=Path(hydra_cfg.runtime.output_dir), composed=cfg,
                                   sweep_dir=sweep_dir, stop=stop))
    except UsageError as exc:
        write_line(f"error: {exc}", sys.stderr)
        return ExitCode.USAGE
    if record.status is Status.INTERRUPTED and os.getpid() == _sweep_pid:
        raise KeyboardInterrupt  # Ctrl-C stops the whole sweep, not just this job (elsewhere: a cluster stopped it)
    return int(record.exit_code)


def _in_start_dir(hydra_cfg: HydraConf) -> contextlib.AbstractContextManager:
    """The job in the dir the sweep was started from (``hydra.runtime.cwd``), as a run works in its shell's, so
    relative paths in the config (``rubric.dataset``, ``rubric.workspace``, ``worker.script``, ...) name the same
    files on every launcher: a Ray worker starts in its node's dir. Left where it is when that dir is not here."""
    start = str(hydra_cfg.runtime.cwd)
    return contextlib.chdir(start) if os.path.isdir(start) else contextlib.nullcontext()


def _scrub_saved_config(hydra_cfg: HydraConf, cfg: DictConfig, overrides: list[str]) -> None:
    """Hydra saved the config and overrides before the job ran: take any secret back out of them."""
    secrets = [*config_secrets(OmegaConf.to_container(cfg, resolve=False), overrides), *secret_values()]
    paths: list[Path] = []
    if hydra_cfg.output_subdir:
        paths += Path(hydra_cfg.runtime.output_dir, hydra_cfg.output_subdir).glob("*.yaml")
    paths.append(Path(hydra_cfg.sweep.dir, "multirun.yaml"))
    for path in paths if secrets else []:
        if path.is_file():
            scrub_text_file(path, secrets)


def usage(exc: BaseException, argv: list[str]) -> int:
    """One line naming the key and the fix (after Hydra's full trace with ``HYDRA_FULL_ERROR=1``); exit 2."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(exc)  # with the error Hydra raised, as its cause
    line = str(usage_error(exc, argv)) if isinstance(exc, Exception) else str(exc)
    write_line(f"error: {redact(line, [*config_secrets(None, argv), *secret_values()])}", sys.stderr)
    return ExitCode.USAGE


def _check_sweep(hydra: compat_hydra.Hydra, cfg: DictConfig, summary: SweepSummary | None, owner: contextlib.ExitStack) -> None:
    """Before any job: every value of the sweep composes and passes the checks a run makes of its config,
    and the sweep dir can be written, holds no other sweep's runs (unless resumed) and is no other sweep's
    now: its lock is entered into ``owner``. Raises what a single run would."""
    from ..config.validate import validate
    from ..loop.lock import run_dir_lock
    from ..records import find_run_dirs

    task_overrides = cast(list[str], OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False))
    for overrides in compat_hydra.first_of_each_value(task_overrides):
        validate(_job_config(hydra, cfg, overrides))
    _refuse_overlapping_tasks(hydra, cfg, compat_hydra.combinations(task_overrides))
    if summary is not None:
        summary.begin(cfg)
    sweep_dir = Path(str(cfg.hydra.sweep.dir))
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=sweep_dir).close()
    except OSError as exc:
        raise unwritable(exc, "hydra.sweep.dir", "choose a hydra.sweep.dir you may write") from None
    if find_run_dirs(sweep_dir) and sweep_dir.is_dir() and not OmegaConf.select(cfg, "run.resume"):
        raise UsageError("hydra.sweep.dir", f"{sweep_dir} already holds the runs of another sweep",
                         "leave hydra.sweep.dir unset for a new dir, or add run.resume=true to continue that sweep")
    owner.enter_context(run_dir_lock(sweep_dir.absolute(), "hydra.sweep.dir"))


def _job_config(hydra: compat_hydra.Hydra, cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The config a sweep's job of ``overrides`` composes, without its ``hydra`` node."""
    job_cfg = hydra.config_loader.load_sweep_config(cfg, overrides)
    with open_dict(job_cfg):
        del job_cfg["hydra"]
    return job_cfg


def _refuse_overlapping_tasks(hydra: compat_hydra.Hydra, cfg: DictConfig, jobs: list[list[str]]) -> None:
    """Jobs of one configuration (``config.fingerprint``) whose ``rubric.tasks`` pick a task in common would
    run it twice, and the reports would count the two runs as repeats: refuse, naming the task and both
    selections. Checked when the sweep gives its jobs different ``rubric.tasks``; a selection that picks
    nothing is left to fail its own job."""
    from ..config.fingerprint import fingerprint
    from ..config.validate import validate
    from ..tasks.sets import load_tasks

    selections = [next((re.sub(r"\\(.)", r"\1", o) for o in job if o.lstrip("+").startswith("rubric.tasks=")), None)
                  for job in jobs]  # as typed: Hydra escapes a swept value's ':'
    if len(set(selections)) < 2:
        return
    picked: dict[tuple[str, str], tuple[int, str | None]] = {}
    for number, (overrides, selection) in enumerate(zip(jobs, selections)):
        job_cfg = _job_config(hydra, cfg, overrides)
        key = fingerprint(cast(dict[str, Any], OmegaConf.to_container(job_cfg, resolve=True, enum_to_str=True)), overrides)
        try:
            tasks = load_tasks(validate(job_cfg))
        except UsageError:
            continue
        for task in tasks:
            other, chosen = picked.setdefault((key, task.id), (number, selection))
            if other != number:
                raise UsageError("rubric.tasks", f"{chosen} and {selection} both pick task {task.id} of one configuration: "
                                 "it would run twice, and the reports would count the two runs as repeats",
                                 "give the jobs slices that do not overlap, e.g. 'rubric.tasks=[0:50]','rubric.tasks=[50:100]'; "
                                 "for repeats, run.repeats=N")


def _sweep(config_dirs: list[str], overrides: list[str], argv: list[str]) -> int:
    """Compose and check the sweep, run it (as ``Hydra.multirun`` does), and conclude it whatever happened."""
    global _sweep_pid
    _sweep_pid = os.getpid()
    from .sweep import SweepSummary

    with contextlib.ExitStack() as owner:  # the sweep dir's lock, held until the sweep is concluded
        try:
            hydra = compat_hydra.app(config_dirs)
            cfg = hydra.compose_config(compat_hydra.CONFIG_NAME, overrides, with_log_configuration=True, run_mode=RunMode.MULTIRUN)
            callbacks = compat_hydra.Callbacks(cfg)
            summary = next((c for c in callbacks.callbacks if isinstance(c, SweepSummary)), None)
            _check_sweep(hydra, cfg, summary, owner)
        except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here
            return usage(exc, argv)
        return _run_sweep(hydra, cfg, callbacks, summary)


def _run_sweep(hydra: compat_hydra.Hydra, cfg: DictConfig, callbacks: compat_hydra.Callbacks, summary: SweepSummary | None) -> int:
    """Run the checked sweep's jobs and conclude it, whatever happened; its exit code."""
    from ..loop.signals import SWEEP_STOP_FILE, SweepStop
    from ..observe.console import Console

    callbacks.on_multirun_start(config=cfg, config_name=compat_hydra.CONFIG_NAME)
    conclude = summary.conclude if summary is not None else (lambda interrupted=False, failure=None: ExitCode.SATISFIED)
    marker = Path(str(cfg.hydra.sweep.dir)).absolute() / SWEEP_STOP_FILE
    stop = SweepStop(marker, Console().line)
    marker.unlink(missing_ok=True)  # left by a sweep killed before it could clear it; this one holds the dir's lock
    try:
        with stop.installed():
            sweeper = Plugins.instance().instantiate_sweeper(
                config=cfg, hydra_context=HydraContext(config_loader=hydra.config_loader, callbacks=callbacks), task_function=job,
            )
            sweeper.sweep(arguments=cast(list[str], OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False)))
            callbacks.on_multirun_end(config=cfg, config_name=compat_hydra.CONFIG_NAME)
    except KeyboardInterrupt:
        return conclude(interrupted=True)
    except Exception as exc:  # the launcher's failure, or a job's exception re-raised after its batch: one line
        return conclude(failure=exc)
    else:
        return conclude()
    finally:  # after the summary, which reads it: the sweep was stopped
        marker.unlink(missing_ok=True)


def _single(config_dirs: list[str], overrides: list[str], argv: list[str]) -> int:
    """One run: a launch of the overrides' config; its exit code."""
    from ..loop.launch import launch
    from ..loop.request import Launch
    from ..loop.signals import StopRequest
    from ..records import ConfigSources

    try:
        with StopRequest().installed() as stop:
            record = launch(Launch(ConfigSources(overrides=overrides, config_dirs=config_dirs), stop=stop))
    except UsageError as exc:
        return usage(exc, argv)
    return int(record.exit_code)


def run_hydra(argv: list[str]) -> int:
    """``rubric-runner [HYDRA FLAGS] OVERRIDES...``: a run, a sweep (``-m``), or Hydra's ``--cfg``,
    ``--info``, ``--hydra-help``, ``--shell-completion``; returns the exit code."""
    register_configs()
    parser = compat_hydra.get_args_parser()
    args = parser.parse_args(argv)
    commands = args.run + (args.cfg is not None) + args.multirun + args.shell_completion + (args.info is not None)
    if commands > 1 or args.experimental_rerun is not None or (args.resolve and args.cfg is None):
        return usage(UsageError("", "use one of --run, --multirun, --cfg (with --resolve), --info, --shell-completion",
                                "`--hydra-help` lists Hydra's flags"), argv)
    config_dirs = [os.path.abspath(args.config_dir)] if args.config_dir is not None else []
    overrides = list(args.overrides)
    try:
        check_group_choices(overrides)
        hydra = compat_hydra.app(config_dirs)
        if args.hydra_help or args.cfg or args.info or args.shell_completion:
            return _hydra_command(hydra, parser, args, overrides, argv)
        multirun = args.multirun or hydra.get_mode(config_name=compat_hydra.CONFIG_NAME, overrides=overrides) == RunMode.MULTIRUN
    except Exception as exc:
        return usage(exc, argv)
    finally:
        GlobalHydra.instance().clear()
    with process_tweaks():
        if multirun:
            try:
                return _sweep(config_dirs, [*overrides, "hydra.mode=MULTIRUN"], argv)
            finally:
                GlobalHydra.instance().clear()
        return _single(config_dirs, overrides, argv)


def _hydra_command(hydra: compat_hydra.Hydra, parser: argparse.ArgumentParser, args: argparse.Namespace, overrides: list[str],
                   argv: list[str]) -> int:
    """Hydra's own ``--hydra-help``, ``--cfg``, ``--info`` and ``--shell-completion``."""
    name = compat_hydra.CONFIG_NAME
    if args.hydra_help:
        hydra.hydra_help(config_name=name, args_parser=parser, args=args)
    elif args.cfg:
        hydra.show_cfg(config_name=name, overrides=overrides, cfg_type=args.cfg, package=args.package, resolve=args.resolve)
    elif args.info:
        hydra.show_info(args.info, config_name=name, overrides=overrides)
    else:
        hydra.shell_completion(config_name=name, overrides=overrides)
    return ExitCode.SATISFIED
