"""``rubric-runner continue``: a follow-up turn on a finished run's thread; and resuming such a turn."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..api import save_config
from ..config.compose import compose
from ..config.hydra_errors import describe
from ..errors import ConfigError
from ..loop.followup import FollowUp, next_turn, record_dir_of, resumed_turn
from ..loop.launch import claim_run_dir, execute
from ..loop.signals import StopRequest
from ..records import ExitCode, RunRecord, saved_overrides


def _kept(overrides: list[str] | None) -> list[str]:
    return [override for override in overrides or [] if not override.startswith("run.resume=")]


def continue_run(args: argparse.Namespace) -> int:
    """``rubric-runner continue RUN_DIR MESSAGE [OVERRIDES...]``: the next turn, in ``turns/<n>/``."""
    flags = [override for override in args.overrides if override.startswith("-")]
    if flags:
        print(f"error: {flags[0]}: options go before RUN_DIR (rubric-runner continue --task ID RUN_DIR MESSAGE)",
              file=sys.stderr)
        return ExitCode.USAGE
    try:
        follow_up = next_turn(record_dir_of(args.run_dir, args.task, args.repeat), args.message)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    before = saved_overrides(follow_up.previous)
    base = _kept(before if before is not None else saved_overrides(args.run_dir))
    return _run_turn(follow_up, follow_up.dir(), [*base, *args.overrides], resume=False)


def resume_turn(turn_dir: Path, record: RunRecord, overrides: list[str]) -> int:
    """Resume an interrupted follow-up turn in ``turn_dir`` from the thread's checkpoints."""
    return _run_turn(resumed_turn(turn_dir, record), turn_dir,
                     [*_kept(saved_overrides(turn_dir)), *overrides, "run.resume=true"], resume=True)


def _run_turn(follow_up: FollowUp, turn_dir: Path, overrides: list[str], resume: bool) -> int:
    try:
        cfg = compose(overrides)
        claim_run_dir(turn_dir, resume)
    except Exception as exc:  # Hydra and OmegaConf raise many types; all are usage errors here, as is a dir in use
        print(f"error: {describe(exc, overrides)}", file=sys.stderr)
        return ExitCode.USAGE
    save_config(turn_dir, cfg, overrides)
    with StopRequest().installed() as stop:
        record = execute(cfg, turn_dir, overrides, stop=stop, claimed=True, follow_up=follow_up)
    return int(record.exit_code)
