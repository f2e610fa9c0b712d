"""``rubric-runner golden`` and ``review``: golden transcripts from a labelled run, and the review page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError


def add_parsers(subparsers: Any) -> None:
    """The ``golden`` and ``review`` commands."""
    from .arguments import run_dir_argument

    golden = subparsers.add_parser(
        "golden", help="keep a labelled run's transcripts as a grader's regression test",
        description="Copy the labelled transcripts of the run in RUN_DIR, with their labels, into OUT_DIR: a golden "
        "dir that `rubric-runner regrade OUT_DIR grader=...` tests a grader on, exiting 4 below its min agreement.")
    golden.add_argument("--from-checks", action="store_true", help="label the unlabelled answers by their hidden checks")
    golden.add_argument("--min-agreement", type=float, default=None, metavar="RATE",
                        help="the share of verdicts (0..1) a grader must agree on with the labels (default 0.8)")
    golden.add_argument("run_dir", metavar="RUN_DIR", type=run_dir_argument, help="the labelled run dir")
    golden.add_argument("out_dir", metavar="OUT_DIR", type=Path, help="a new dir for the golden transcripts")
    golden.set_defaults(handler="rubric_runner.cli.review:golden")

    review = subparsers.add_parser(
        "review", help="label a run's answers on a local web page",
        description="Serve a page on 127.0.0.1 showing each task's final answer, transcript, rubric and revisions, "
        "where a person labels each answer; labels are saved to RUN_DIR/labels.json as they are given.")
    review.add_argument("--port", type=int, default=8765, help="the port on 127.0.0.1 (default 8765; 0: any free one)")
    review.add_argument("--blind", action="store_true", help="hide the grader's verdict of a task until it is labelled")
    review.add_argument("run_dir", metavar="RUN_DIR", type=run_dir_argument, help="the run dir")
    review.set_defaults(handler="rubric_runner.cli.review:review")


def golden(args: argparse.Namespace) -> int:
    """Make the golden dir and say what it holds."""
    from ..review.golden import DEFAULT_MIN_AGREEMENT, make_golden

    threshold = DEFAULT_MIN_AGREEMENT if args.min_agreement is None else args.min_agreement
    if not 0 <= threshold <= 1:
        raise UsageError("--min-agreement", f"{threshold:g} is no share of verdicts", "give a number from 0 to 1")
    made = make_golden(args.run_dir, args.out_dir, args.from_checks, threshold)
    print(f"golden transcripts: {made['labels']} labelled ({made['from_checks']} from hidden checks) in {args.out_dir}; "
          f"test a grader with: rubric-runner regrade {args.out_dir} grader=...")
    return 0


def review(args: argparse.Namespace) -> int:
    """Serve the review page until interrupted."""
    from ..review.app import serve

    serve(args.run_dir, args.port, args.blind)
    return 0
