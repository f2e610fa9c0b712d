"""``rubric-runner resume``, ``continue`` and ``regrade``: each parses its arguments and calls the API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from .. import api
from ..errors import UsageError
from ..loop.signals import StopRequest
from ..observe.console import Console, write_line
from ..records import ExitCode, RunRecord

MULTIRUN_FLAGS = ("-m", "--multirun")
AGREEMENT_MD = "agreement.md"


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
    """``rubric-runner regrade DIR [-m] [--repeats N] [OVERRIDES...]``: new records in ``DIR/regrades/<time>/``
    (with ``-m``, one numbered dir per grader; with ``--repeats``, one ``repeat-<k>`` dir per grading; and
    their reports), the graders ranked against hidden verification, and their agreement with themselves,
    each other and people's labels in ``agreement.md``. A golden dir's regrade exits 4 when a grader agrees
    with its labels on fewer verdicts than ``--min-agreement``."""
    from ..records import collect
    from ..report import expand, load_prices, ranking_lines, write_all
    from ..review.golden import golden_threshold
    from ..review.labels import labels_under

    overrides = [o for o in args.overrides if o not in MULTIRUN_FLAGS]
    multirun = args.multirun or any(o in MULTIRUN_FLAGS for o in args.overrides)
    flags = [o for o in overrides if o.startswith("--")]
    if flags:
        write_line(f"error: {flags[0]}: options go before RUN_DIR (rubric-runner regrade --repeats 3 RUN_DIR -m grader=...)", sys.stderr)
        return ExitCode.USAGE
    if args.min_agreement is not None and not 0 <= args.min_agreement <= 1:
        write_line(f"error: --min-agreement: {args.min_agreement:g} is no share of verdicts (give a number from 0 to 1)", sys.stderr)
        return ExitCode.USAGE
    try:
        threshold = args.min_agreement if args.min_agreement is not None else golden_threshold(args.run_dir)
        labels = labels_under(args.run_dir)
        with StopRequest().installed() as stop:
            done = api.regrade(args.run_dir, overrides, multirun, _config_dirs(args), stop, args.repeats, args.trust_run_dir)
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
    if multirun or args.repeats > 1:
        write_all(done.dir, jobs, prices=prices_path)
    below = _agreement(done.dir, labels, threshold, console)
    console.line(f"regrade records: {done.dir}")
    code = max((record.exit_code for record in done.records), default=0)
    if below is None or code not in (ExitCode.SATISFIED, ExitCode.UNSATISFIED):
        return code
    # tested against labels: a right rejection is no failure
    return int(ExitCode.BELOW_THRESHOLD if below else ExitCode.SATISFIED)


def _agreement(out_dir: Path, labels: dict, threshold: float | None, console: Console) -> bool | None:
    """Write the regrade's ``agreement.md`` and say what it found; with a ``threshold``, whether a grader
    agrees with the labels on fewer verdicts than it (None without one, or without labelled transcripts)."""
    from ..analysis.agreement import against_labels, graders_of
    from ..review.figures import agreement_lines
    from ..review.ratings import ratings_in

    ratings = ratings_in(out_dir)
    lines = agreement_lines(ratings, labels)
    if lines:
        (out_dir / AGREEMENT_MD).write_text("\n".join(["# Grader agreement", "", *lines]), encoding="utf-8")
        console.line(f"grader agreement: {out_dir / AGREEMENT_MD}")
    if threshold is None:
        return None
    below = None
    for grader, own in graders_of(ratings).items():
        people = against_labels(own, labels).verdict
        share = people.percent.value
        if not people.items or share is None:
            continue
        short = share < threshold
        below = bool(below) or short
        console.line(f"{grader}: agrees with the labels on {people.agreed}/{people.items} verdicts, {people.percent}: "
                     f"{'below' if short else 'at or above'} --min-agreement {threshold:g}")
    if below is None:
        console.warning("no regraded transcript is labelled: --min-agreement has nothing to test")
    return below
