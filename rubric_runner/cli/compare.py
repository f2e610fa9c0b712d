"""``rubric-runner compare BASE NEW [--markdown FILE] [--fail-on-regression [N|p=ALPHA]] [--max-rows N] [--prices FILE]``.

Reads the runs under two dirs (run dirs or sweep dirs), compares them case by case
(``analysis.compare``) and writes a Markdown summary fit for a pull request: to FILE, or to stdout.
Exit codes: 0 compared (and the gate, if asked for, passed); 2 a usage error; 4 the gate failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections import Counter
from pathlib import Path

from ..analysis.compare import CHECKS, MIN_PAIRED, Case, CasePair, Comparison, Gate, Pairing
from ..analysis.numbers import fmt_num, fmt_p, fmt_pct, fmt_rate, fmt_tokens
from ..analysis.paired import PairedRates, fmt_difference
from ..errors import UsageError

ROWS = 50
"""The most rows of each table of the summary by default: a pull request comment holds 65,536 characters."""
GATE = re.compile(r"^(?:(?P<count>\d+)|p\s*[=<]\s*(?P<alpha>0?\.\d+|1(?:\.0*)?))$")


def gate_argument(value: str) -> Gate:
    """``--fail-on-regression``'s threshold: ``N`` (more than N regressed cases fail) or ``p=ALPHA``."""
    match = GATE.match(value.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{value!r} is neither a count nor p=ALPHA "
                                         "(e.g. compare BASE NEW --fail-on-regression 2, or ... --fail-on-regression p=0.05)")
    return Gate(count=int(match["count"])) if match["count"] else Gate(alpha=float(match["alpha"]))


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        share = -1.0
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a share of the cases (0 to 1, e.g. 0.8)")
    return share


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a count of rows (0 or more; 0 lists all)")
    return int(value)


def add_parser(subparsers) -> None:
    """The ``compare`` command."""
    parser = subparsers.add_parser(
        "compare", help="compare two runs or sweeps task by task: regressions, improvements, their p",
        description="Compare the runs under BASE and NEW (run dirs or sweep dirs) task by task: the tasks that "
        "regressed, improved or stayed, on hidden checks where both were checked, else on the grader's verdict; "
        "the exact McNemar p (the sign test on tasks when tasks repeat), a paired 95% interval of the difference in "
        "pass rate (clustered by task when tasks repeat), and the tokens and cost. "
        "Exit 0, or 4 when --fail-on-regression's gate fails, 2 on a usage error.")
    parser.add_argument("base", metavar="BASE", type=Path, help="the runs before the change: a run dir or a sweep dir")
    parser.add_argument("new", metavar="NEW", type=Path, help="the runs after it")
    parser.add_argument("--markdown", metavar="FILE", type=Path, help="write the Markdown summary to FILE (default: print it)")
    parser.add_argument("--fail-on-regression", metavar="N|p=ALPHA", nargs="?", const=Gate(), type=gate_argument,
                        dest="gate", help="exit 4 when more than N cases regressed (default 0: any), or with p=ALPHA "
                        "when more cases regressed than improved and their p is below ALPHA; also when "
                        "fewer than --min-paired of the cases were compared")
    parser.add_argument("--min-paired", type=_share, default=MIN_PAIRED, metavar="SHARE",
                        help=f"the gate fails when fewer than SHARE of the cases of either side were compared "
                        f"(run, finished and decided on both sides; default {MIN_PAIRED})")
    parser.add_argument("--max-rows", type=_count, default=ROWS, metavar="N",
                        help=f"rows of each table of the summary at most (default {ROWS}; 0: all)")
    parser.add_argument("--prices", type=Path, metavar="FILE", help="price table (default conf/prices.yaml)")
    parser.set_defaults(handler="rubric_runner.cli.compare:main")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _delta(before: float | None, after: float | None, digits: int) -> str:
    if before is None or after is None:
        return "n/a"
    text = fmt_num(after - before, digits)
    share = fmt_pct((after - before) / before) if before else ""
    share = f" ({share if share.startswith('-') else '+' + share})" if share else ""
    return f"{text if text.startswith('-') else '+' + text}{share}"


def _pair_label(pair: CasePair, labels: tuple[dict[str, str], dict[str, str]]) -> str:
    before, after = labels[0][pair.base.config], labels[1][pair.new.config]
    return before if before == after else f"{before} -> {after}"


def _config_rows(pairing: Pairing, labels: tuple[dict[str, str], dict[str, str]]) -> list[str]:
    rows = [f"- paired: {_cell(labels[0][before])} with {_cell(labels[1][after])}" for before, after in pairing.pairs]
    for unpaired in pairing.unpaired:
        mine, theirs = labels if unpaired.side == "BASE" else labels[::-1]
        other = "NEW" if unpaired.side == "BASE" else "BASE"
        why = (f"its nearest in {other}, {_cell(theirs[unpaired.nearest])}, differs in {unpaired.differences}"
               if unpaired.nearest else f"no configuration of {other} is left")
        rows.append(f"- **not paired**: {unpaired.side} {_cell(mine[unpaired.config])}: {why}; its runs are listed "
                    f"under Only in {unpaired.side}")
    return rows


def _more(shown: int, total: int) -> list[str]:
    return [f"\n... and {total - shown:,} more (`--max-rows 0` lists them all)"] if total > shown else []


def _case_rows(cases: list[CasePair], labels: tuple[dict[str, str], dict[str, str]], several: bool, limit: int | None) -> list[str]:
    head = "| task | repeat | " + ("configuration | " if several else "") + "BASE | NEW | judged on |"
    rows = [head, "|" + " --- |" * (head.count("|") - 1)]
    shown = cases[:limit]
    for pair in shown:
        config = f"{_cell(_pair_label(pair, labels))} | " if several else ""
        rows.append(f"| {_cell(pair.base.task)} | {pair.base.repeat} | {config}{_status(pair, pair.base)} | "
                    f"{_status(pair, pair.new)} | {pair.basis} |")
    return rows + _more(len(shown), len(cases))


def _status(pair: CasePair, case: Case) -> str:
    if pair.basis == CHECKS:
        return f"{'passed' if case.verified else 'failed'} ({case.status})"
    return str(case.status)


def _one_side_rows(cases: list[Case], labels: dict[str, str], limit: int | None) -> list[str]:
    shown = cases[:limit]
    rows = ["| task | repeat | configuration | status |", "| --- | --- | --- | --- |"]
    rows += [f"| {_cell(c.task)} | {c.repeat} | {_cell(labels[c.config])} | {c.status} |" for c in shown]
    return rows + _more(len(shown), len(cases))


def markdown(result: Comparison, base: Path, new: Path, labels: tuple[dict[str, str], dict[str, str]],
             gate: Gate | None, failed: bool, max_rows: int = ROWS) -> str:
    """The comparison as Markdown, for a pull request (``labels``: of BASE's and of NEW's configurations), each
    table cut to ``max_rows`` rows (0: all)."""
    limit = max_rows or None
    rates = result.paired
    both, lost, gained, neither = rates.counts
    n = len(result.cases)
    checked = sum(pair.basis == CHECKS for pair in result.cases)
    lines = [
        "## rubric-runner compare", "",
        f"**BASE** `{base}` ({result.base_total.runs} runs) vs **NEW** `{new}` ({result.new_total.runs} runs); "
        f"configurations paired by fingerprint: {result.pairing.clause}.", "",
        "| | BASE | NEW | change |", "| --- | --- | --- | --- |",
        f"| passed | {fmt_rate(both + lost, n)} | {fmt_rate(both + gained, n)} | {fmt_difference(rates)} |",
        f"| tokens | {fmt_tokens(result.base_spend.tokens)} | {fmt_tokens(result.new_spend.tokens)} | "
        f"{_delta(result.base_spend.tokens, result.new_spend.tokens, 0)} |",
        f"| est. USD | {fmt_num(result.base_spend.cost, 4)} | {fmt_num(result.new_spend.cost, 4)} | "
        f"{_delta(result.base_spend.cost, result.new_spend.cost, 4)} |", "",
        f"**{lost} regressed**, {gained} improved, {both + neither} unchanged ({both} passed both, {neither} failed both) "
        f"of {n} cases; {rates.test} {fmt_p(rates.p)} on {_counted(rates)}. Judged on hidden checks: "
        f"{checked}, on the grader's verdict: {n - checked}.",
    ]
    if result.crashed:
        lines += ["", f"{len(result.crashed)} case{'' if len(result.crashed) == 1 else 's'} crashed on one side or both "
                  f"({_statuses(result.crashed)}): no verdict, outside the rates, listed under Crashed."]
    if gate is not None:
        lines += ["", f"Gate ({gate.describe()}): **{'failed' if failed else 'passed'}**{_too_few(result, gate)}."]
    pairing = result.pairing
    several = len(pairing.pairs) > 1
    if several or pairing.unpaired:
        lines += ["", f"### Configurations ({len(pairing.pairs)} paired, {len(pairing.unpaired)} not)", "",
                  *_config_rows(pairing, labels)]
    for title, cases in (("Regressed", result.by_change("regressed")), ("Improved", result.by_change("improved")),
                         ("Not finished on one side", result.unfinished), ("Crashed", result.crashed)):
        if cases:
            lines += ["", f"### {title} ({len(cases)})", "", *_case_rows(cases, labels, several, limit)]
    for title, only, named in (("Only in BASE", result.only_base, labels[0]), ("Only in NEW", result.only_new, labels[1])):
        if only:
            lines += ["", f"### {title} ({len(only)})", "", *_one_side_rows(only, named, limit)]
    unchanged = result.by_change("passed") + result.by_change("failed")
    if unchanged:
        lines += ["", f"<details><summary>Unchanged ({len(unchanged)})</summary>", "",
                  *_case_rows(unchanged, labels, several, limit), "", "</details>"]
    return "\n".join(lines) + "\n"


def _counted(rates: PairedRates) -> str:
    """What the test counts: the discordant cases, or with repeats the tasks that moved."""
    return rates.counted + (" (their repeats are not independent pairs)" if rates.repeated else "")


def _statuses(pairs: list[CasePair]) -> str:
    counts = Counter(case.status.value for pair in pairs for case in (pair.base, pair.new) if not case.status.decided)
    return ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))


def _too_few(result: Comparison, gate: Gate) -> str:
    """Why the gate failed for want of compared cases, or nothing."""
    if not result.cases:
        return " (no case of BASE paired with one of NEW: nothing was compared)"
    if gate.too_few(result):
        return (f" ({len(result.cases)} of {result.total} cases compared, {fmt_pct(result.paired_share)}, "
                f"fewer than --min-paired {gate.min_paired:g})")
    return ""


def main(args: argparse.Namespace) -> int:
    """Compare BASE and NEW; exit 4 when the gate fails."""
    from .. import api
    from ..config.prices import PriceError, load_prices

    try:
        prices = load_prices(args.prices)
    except PriceError as exc:
        raise UsageError("--prices", str(exc), "give a price table of {model: {input, output}}") from None
    gate = None if args.gate is None else dataclasses.replace(args.gate, min_paired=args.min_paired)
    done = api.compare(args.base, args.new, gate, prices)
    result, failed = done.comparison, done.failed
    text = markdown(result, args.base, args.new, done.labels, gate, failed, args.max_rows)
    if args.markdown:
        try:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError("--markdown", f"cannot write {args.markdown}: {exc.strerror or exc}", "give a file in a dir you may write") from None
    else:
        print(text)
    rates = result.paired
    missing = f", {len(result.only_base)} only in BASE, {len(result.only_new)} only in NEW" if result.only_base or result.only_new else ""
    print(f"compare: {rates.lost} regressed, {rates.gained} improved of {len(result.cases)} cases{missing}; "
          f"{rates.test} {fmt_p(rates.p)}" + (f"; gate {'failed' if failed else 'passed'}" if gate else "")
          + (" (nothing paired)" if gate and not result.cases else " (too few compared)" if gate and gate.too_few(result) else "")
          + f" -> exit {done.exit_code}" + (f"\n  {args.markdown}" if args.markdown else ""))
    return done.exit_code
