"""What the budgets of a set of runs allowed, spent and left undone, as lines for a person."""

from __future__ import annotations

from ..records import RunRecord, Status
from .numbers import fmt_tokens


def spend_lines(records: list[RunRecord]) -> list[str]:
    """What the budgets of these runs allowed, what was spent, and what the budgets left undone."""
    lines = []
    sweep = [info for record in records for info in record.budgets if info.scope == "sweep"]
    if sweep:  # every job books into one ledger: the job that ended last saw the most of it
        info = max(sweep, key=lambda info: info.spent_tokens)
        lines.append(f"Sweep budget: spent {info.spent()}{' (reached)' if info.reached else ''}")
    runs = [info for record in records for info in record.budgets if info.scope == "run"]
    if len(runs) == 1:
        lines.append(f"Run budget: spent {runs[0].spent()}{' (reached)' if runs[0].reached else ''}")
    elif runs:
        reached = sum(info.reached for info in runs)
        tokens = sum(info.spent_tokens for info in runs)
        lines.append(f"Run budgets: {fmt_tokens(tokens)} tokens spent by {len(runs)} runs, "
                     f"{reached} of them reached their budget")
    rows = [row.status for record in records for row in (record.tasks or [record])]
    not_run, cut_short = rows.count(Status.NOT_RUN), rows.count(Status.BUDGET_EXCEEDED)
    if not_run or cut_short:
        lines.append(f"Left undone by the budget: {not_run} task(s) not run, {cut_short} cut short"
                     " (resume with a larger budget to finish them)")
    return lines
