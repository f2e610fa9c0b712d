"""``rubric-runner policies RUN_OR_SWEEP_DIR [--return RULE] [--up-to N] [--json] [--prices FILE]``.

Replays other loop policies over the runs' own records (``analysis.policies``), with no model call, and
prints, per configuration, each policy's pass rate, spend and its paired difference against the runs as
they ran, then, where a configuration alike but in its policy ran one, the replay beside those real runs:
the tables report.md's "Which loop policy?" holds, or with ``--json`` their figures (null where
undefined). Exit 0, or 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.policies import RETURNS
from ..errors import UsageError

if TYPE_CHECKING:
    from ..report.columns import Table


def _passes(value: str) -> int:
    if not value.isdigit() or not int(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of grading passes (1 or more)")
    return int(value)


def add_parser(subparsers) -> None:
    """The ``policies`` command."""
    parser = subparsers.add_parser(
        "policies", help="replay other loop policies (keep the best attempt, stop early) over a run's records",
        description="Replay loop policies over the grading passes recorded under DIR (a run dir or a sweep dir), "
        "with no model call: per configuration, the pass rate of the answer each policy would return, the tokens "
        "and est. USD it would have spent, and the difference against the runs as they ran (paired, with its 95% "
        "CI and the exact McNemar p, or the sign test on tasks when tasks repeat). Runs a policy would need an "
        "attempt of that they never made are counted as not replayable.")
    parser.add_argument("dir", metavar="RUN_OR_SWEEP_DIR", type=Path, help="a run dir or a sweep dir")
    parser.add_argument("--return", dest="returns", choices=RETURNS, default="last",
                        help="the attempt the stop rules and caps return (default last, as the library does)")
    parser.add_argument("--up-to", type=_passes, default=None, metavar="N",
                        help="replay max_iterations=1..N (default: each configuration's own grader.max_iterations)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (null where undefined)")
    parser.add_argument("--prices", type=Path, metavar="FILE", help="price table (default conf/prices.yaml)")
    parser.set_defaults(handler="rubric_runner.cli.policies:main")


def main(args: argparse.Namespace) -> int:
    """Print the replay of the runs under ``args.dir``."""
    from .. import api
    from ..config.prices import PriceError, load_prices

    try:
        prices = load_prices(args.prices)
    except PriceError as exc:
        raise UsageError("--prices", str(exc), "give a price table of {model: {input, output}}") from None
    found = api.policies(args.dir, args.returns, args.up_to, prices)
    if found is None:
        print(f"policies: no run under {args.dir} took more than one grading pass: every policy returns what it did")
        return 0
    if args.json:
        print(json.dumps({"on": found.on, "policies": [r.as_dict() for r in found.replayed],
                          "beside_real": [b.as_dict() for b in found.beside]}, indent=2))
        return 0
    print(f"policies: {found.runs} runs under {args.dir}, on the {found.on}")
    _print(found.tables["policies"])
    if "policies-real" in found.tables:
        print("\npolicies: replayed over the runs of the library's policy, beside the real runs of a configuration "
              "alike but in loop.returns and loop.stop, paired on task and repeat")
        _print(found.tables["policies-real"])
    return 0


def _print(table: Table) -> None:
    """``table`` as Markdown."""
    columns = table.md_columns()
    print("| " + " | ".join(c.header for c in columns) + " |")
    print("|" + "---|" * len(columns))
    print("".join(table.md_rows()), end="")
