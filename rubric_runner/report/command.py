"""``rubric-runner report DIR [--fail-under RATE] [--prices FILE] [--junit FILE]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..records import BAD_RECORD, RESULT_FILE, ExitCode, Job, collect, sweep_exit_code
from ..records.store import gc_paused
from . import PriceError, done, expand, gate_statuses, verdict_line, write_all
from .runs import Run


@gc_paused()
def main(args: argparse.Namespace) -> int:
    """Write the summary files and reports of a sweep or run dir; exit 4 below ``--fail-under`` (a
    fraction of runs: tasks x repeats, a job that did not start counting as one run not satisfied); exit 3,
    after writing what could be read, when a record is unreadable (each named on stderr)."""
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
    if args.junit is not None:
        from .junit import write_junit

        try:
            paths.append(write_junit(args.junit, runs))
        except OSError as exc:
            usage_error(f"--junit: cannot write {args.junit}: {exc.strerror or exc}")
    code = sweep_exit_code(gate_statuses(jobs, runs), args.fail_under) if args.fail_under is not None else ExitCode.SATISFIED
    unreadable = unreadable_records(jobs, runs)
    for line in unreadable:
        print(f"warning: {line}", file=sys.stderr)
    if unreadable:
        code = max(code, ExitCode.ERROR)
    print(f"report: {verdict_line(jobs, runs, args.fail_under, done(args.dir, jobs, runs))} -> exit {int(code)}")
    for path in paths:
        print(f"  {path}")
    return code


def unreadable_records(jobs: list[Job], runs: list[Run]) -> list[str]:
    """``PATH: why`` for each ``result.json`` (a job's or a task's) that could not be read."""
    found = [(job.record.run_dir, job.record.error.message) for job in jobs
             if job.record.error is not None and job.record.error.type == BAD_RECORD]
    found += [(run.run_dir, run.error.removeprefix(f"{BAD_RECORD}: ")) for run in runs
              if run.error.startswith(f"{BAD_RECORD}: ") and run.job.record.error is None]
    return [f"{Path(where or '.') / RESULT_FILE} is {message.removeprefix(f'{RESULT_FILE} is ')}" for where, message in found]
