"""Budgets of a run and of a sweep: what each task spent, in a ledger every job of a sweep can read.

A budget caps the billed tokens and/or the estimated USD (at the price table's rates) that its scope
spends: ``run.budget_*`` one run, ``sweep.budget_*`` all the jobs of a sweep together. Jobs may run in
other processes or machines, so the sweep's spend is kept in a SQLite file in the sweep dir, one row per
task, each row what that task has spent in all (a resumed task raises its own row, never adds a second).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.prices import billed, cost_of
from ..config.prices import load_prices
from ..config.schema import Config, RunConfig, SweepConfig
from ..records import BudgetInfo, LimitHit, RunHeader, TaskRecord

LEDGER_FILE = "spend.sqlite"
"""The sweep's ledger, in the sweep dir."""


class SpendLedger:
    """Billed tokens and estimated USD of each task, in SQLite (``":memory:"``: this process's only).

    The file uses SQLite's rollback journal (not WAL), so processes on several machines can share it
    on storage with working POSIX locks.
    """

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._connection.execute("CREATE TABLE IF NOT EXISTS spend (task TEXT PRIMARY KEY, tokens INTEGER NOT NULL, usd REAL)")

    def book(self, task: str, tokens: int, usd: float | None) -> None:
        """Set what ``task`` has spent in all (``usd`` None: its models have no price)."""
        with self._lock:
            self._connection.execute(
                "INSERT INTO spend VALUES (?, ?, ?) ON CONFLICT (task) DO UPDATE SET tokens = excluded.tokens, usd = excluded.usd",
                (task, tokens, usd),
            )

    def rename(self, task: str, to: str) -> None:
        """Book what ``task`` spent under the key ``to`` instead (the task was laid out anew)."""
        with self._lock:
            self._connection.execute("UPDATE OR REPLACE spend SET task = ? WHERE task = ?", (to, task))

    def total(self) -> tuple[int, float | None]:
        """Tokens and USD spent by every task; USD is None when some task's models have no price."""
        with self._lock:
            tokens, usd, unpriced = self._connection.execute(
                "SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(usd), 0.0), COUNT(*) - COUNT(usd) FROM spend"
            ).fetchone()
        return tokens, None if unpriced else usd

    def close(self) -> None:
        """Close the file."""
        self._connection.close()


@dataclass
class Budget:
    """One budget: a cap in tokens and/or USD on what its scope spends, and the ledger it reads."""

    scope: str
    tokens: int | None
    usd: float | None
    ledger: SpendLedger
    root: Path
    """Tasks are booked by their dir relative to this (the run dir, or the sweep dir)."""

    def spent(self) -> tuple[int, float | None]:
        """Tokens and USD spent so far in the scope."""
        return self.ledger.total()

    def reached(self) -> LimitHit | None:
        """The cap that the spend so far has reached, if any."""
        tokens, usd = self.spent()
        if self.tokens is not None and tokens >= self.tokens:
            return LimitHit(name=f"{self.scope}.budget_tokens", limit=self.tokens, value=tokens)
        if self.usd is not None and usd is not None and usd >= self.usd:
            return LimitHit(name=f"{self.scope}.budget_usd", limit=self.usd, value=round(usd, 6))
        return None

    def info(self) -> BudgetInfo:
        """The budget and the spend against it, for the run's record."""
        tokens, usd = self.spent()
        return BudgetInfo(scope=self.scope, tokens=self.tokens, usd=self.usd, spent_tokens=tokens,
                          spent_usd=None if usd is None else round(usd, 6), reached=self.reached() is not None)


class Budgets:
    """The budgets a run is held to (``run.budget_*``; ``sweep.budget_*`` in a sweep's job) and the prices
    that turn its tokens into USD (checked with the config: a USD budget has a price for every model)."""

    def __init__(self, config: Config, header: RunHeader, run_dir: Path, sweep_dir: Path | None = None) -> None:
        scopes: list[tuple[str, RunConfig | SweepConfig, Path]] = [("run", config.run, run_dir)]
        if sweep_dir:
            scopes.append(("sweep", config.sweep, sweep_dir))
        scopes = [(scope, node, root) for scope, node, root in scopes if node.budget_tokens or node.budget_usd]
        self.header = header
        self.prices: dict[str, Any] = {}
        self.budgets: list[Budget] = []
        if not scopes:
            return
        self.prices = load_prices(config.sweep.prices)
        for scope, node, root in scopes:
            ledger = SpendLedger(root / LEDGER_FILE if scope == "sweep" else ":memory:")
            self.budgets.append(Budget(scope, node.budget_tokens, node.budget_usd, ledger, Path(root)))

    def book(self, result: TaskRecord, task_dir: Path) -> None:
        """Book what a task has spent in all (billed tokens, worker and grader; USD at the table's rates)."""
        if not self.budgets:
            return
        tokens = result.tokens()
        usd = cost_of(billed(self.header, result.usage), self.prices)
        for budget in self.budgets:
            budget.ledger.book(os.path.relpath(task_dir, budget.root), tokens, usd)

    def moved(self, task_dir: Path, to: Path) -> None:
        """A task's spend, booked under ``task_dir``, is now under ``to`` (``run.move_inline_task``)."""
        for budget in self.budgets:
            budget.ledger.rename(os.path.relpath(task_dir, budget.root), os.path.relpath(to, budget.root))

    def reached(self) -> LimitHit | None:
        """The first budget reached, if any."""
        return next((hit for budget in self.budgets if (hit := budget.reached()) is not None), None)

    def infos(self) -> list[BudgetInfo]:
        """Each budget and the spend against it, for the run's record."""
        return [budget.info() for budget in self.budgets]

    def progress(self) -> str:
        """Spend so far against each budget, for the console's progress line."""
        return "  ".join(f"{info.scope} budget {info.spent()}" for info in self.infos())

    def close(self) -> None:
        """Close the ledgers."""
        for budget in self.budgets:
            budget.ledger.close()
