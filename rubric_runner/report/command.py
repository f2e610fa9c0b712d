"""``rubric-runner report DIR [--fail-under RATE] [--prices FILE]``."""

from __future__ import annotations

import argparse

from ..records import ExitCode, collect, sweep_exit_code
from ..records.store import gc_paused
from . import PriceError, done, expand, gate_statuses, verdict_line, write_all


@gc_paused()
def main(args: argparse.Namespace) -> int:
    """Write the summary files and reports of a sweep or run dir; exit 4 below ``--fail-under`` (a
    fraction of runs: tasks x repeats, a job that did not start counting as one run not satisfied)."""
    usage_error = args.parser.error
    if args.fail_under is not None and not 0 <= args.fail_under <= 1:
        usage_error(f"--fail-under must be a fraction from 0 to 1, got {args.fail_under}")
    if not args.dir.is_dir():
        usage_error(f"{args.dir} is not a directory")
    jobs = collect(args.dir)
    if not jobs:
        usage_error(f"no runs under {args.dir}: no dir holds a result.json or a .hydra/ config")
    runs = expand(jobs)
    try:
        paths = write_all(args.dir, jobs, runs, args.prices)
    except PriceError as exc:
        usage_error(str(exc))
    code = sweep_exit_code(gate_statuses(jobs, runs), args.fail_under) if args.fail_under is not None else ExitCode.SATISFIED
    print(f"report: {verdict_line(jobs, runs, args.fail_under, done(args.dir, jobs, runs))} -> exit {int(code)}")
    for path in paths:
        print(f"  {path}")
    return code
