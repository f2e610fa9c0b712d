"""``rubric-runner resume``, ``continue`` and ``regrade``: each parses its arguments and calls the API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .. import api
from ..errors import UsageError
from ..loop.signals import StopRequest
from ..observe.console import Console, write_line
from ..records import ExitCode, RunRecord

MULTIRUN_FLAGS = ("-m", "--multirun")


def _launched(start: Callable[[StopRequest], RunRecord]) -> int:
    """Start work with the command line's signal handling; its exit code, or 2 with one line."""
    try:
        with StopRequest().installed() as stop:
            return int(start(stop).exit_code)
    except UsageError as exc:
        write_line(f"error: {exc}", sys.stderr)
        return ExitCode.USAGE


def _config_dirs(args: argparse.Namespace) -> list[str]:
    return [args.config_dir] if args.config_dir else []


def resume(args: argparse.Namespace) -> int:
    """``rubric-runner resume RUN_DIR [OVERRIDES...]``: continue a run (or a follow-up turn) with its own config."""
    return _launched(lambda stop: api.resume(args.run_dir, args.overrides, _config_dirs(args), stop))


def continue_run(args: argparse.Namespace) -> int:
    """``rubric-runner continue RUN_DIR MESSAGE [OVERRIDES...]``: the next turn, in ``turns/<n>/``."""
    flags = [override for override in args.overrides if override.startswith("-")]
    if flags:
        write_line(f"error: {flags[0]}: options go before RUN_DIR (rubric-runner continue --task ID RUN_DIR MESSAGE)", sys.stderr)
        return ExitCode.USAGE
    return _launched(lambda stop: api.continue_run(args.run_dir, args.message, args.overrides, args.task, args.repeat,
                                                   _config_dirs(args), stop))


def regrade(args: argparse.Namespace) -> int:
    """``rubric-runner regrade DIR [-m] [OVERRIDES...]``: new records in ``DIR/regrades/<time>/`` (with ``-m``,
    one numbered dir per grader, and their reports), the graders ranked against hidden verification."""
    from ..records import collect
    from ..report import expand, load_prices, ranking_lines, write_all

    overrides = [o for o in args.overrides if o not in MULTIRUN_FLAGS]
    multirun = args.multirun or any(o in MULTIRUN_FLAGS for o in args.overrides)
    try:
        with StopRequest().installed() as stop:
            done = api.regrade(args.run_dir, overrides, multirun, _config_dirs(args), stop)
    except UsageError as exc:
        write_line(f"error: {exc}", sys.stderr)
        return ExitCode.USAGE
    console = Console()
    jobs = collect(done.dir)
    prices_path = done.records[0].header.config.get("sweep", {}).get("prices")
    prices = load_prices(prices_path)
    ranking = ranking_lines(expand(jobs), prices)
    if ranking:
        console.line("graders ranked by balanced error against hidden verification, on the same transcripts:")
    for line in ranking:
        console.line(f"  {line}")
    if multirun:
        write_all(done.dir, jobs, prices=prices_path)
    console.line(f"regrade records: {done.dir}")
    return max((record.exit_code for record in done.records), default=0)
