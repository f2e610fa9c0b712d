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
    return _launched(lambda stop: api.resume(args.run_dir, args.overrides, _config_dirs(args), stop, args.trust_run_dir))


def continue_run(args: argparse.Namespace) -> int:
    """``rubric-runner continue RUN_DIR MESSAGE [OVERRIDES...]``: the next turn, in ``turns/<n>/``."""
    flags = [override for override in args.overrides if override.startswith("-")]
    if flags:
        write_line(f"error: {flags[0]}: options go before RUN_DIR (rubric-runner continue --task ID RUN_DIR MESSAGE)", sys.stderr)
        return ExitCode.USAGE
    return _launched(lambda stop: api.continue_run(args.run_dir, args.message, args.overrides, args.task, args.repeat,
                                                   _config_dirs(args), stop, args.trust_run_dir))


def regrade(args: argparse.Namespace) -> int:
    """``rubric-runner regrade DIR [-m] [--repeats N] [--min-agreement RATE] [OVERRIDES...]``: ``api.regrade``,
    then the graders' ranking, the agreement file and each labelled grader's test said on the console; the
    regrade's exit code (4 when a grader agrees with people's labels on too few verdicts)."""
    overrides = [o for o in args.overrides if o not in MULTIRUN_FLAGS]
    multirun = args.multirun or any(o in MULTIRUN_FLAGS for o in args.overrides)
    flags = [o for o in overrides if o.startswith("--")]
    if flags:
        write_line(f"error: {flags[0]}: options go before RUN_DIR (rubric-runner regrade --repeats 3 RUN_DIR -m grader=...)", sys.stderr)
        return ExitCode.USAGE
    try:
        with StopRequest().installed() as stop:
            done = api.regrade(args.run_dir, overrides, multirun, _config_dirs(args), stop, args.repeats, args.trust_run_dir,
                               args.min_agreement)
    except UsageError as exc:
        write_line(f"error: {exc}", sys.stderr)
        return ExitCode.USAGE
    console = Console()
    if done.ranking:
        console.line("graders ranked by balanced error against hidden verification, on the same transcripts:")
    for line in done.ranking:
        console.line(f"  {line}")
    if done.agreement is not None:
        console.line(f"grader agreement: {done.agreement}")
    for test in done.label_tests:
        console.line(f"{test.grader}: agrees with the labels on {test.agreed}/{test.verdicts} verdicts, {test.share}: "
                     f"{'below' if test.below else 'at or above'} --min-agreement {done.min_agreement:g}")
    if done.min_agreement is not None and not done.label_tests:
        console.warning("no regraded transcript is labelled: --min-agreement has nothing to test")
    console.line(f"regrade records: {done.dir}")
    return done.exit_code
