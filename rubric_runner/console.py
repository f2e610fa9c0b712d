"""The live trail a person reads while a run goes on."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from .redaction import redact


class Console:
    """Prints short lines: what is being graded, each verdict, failing criteria and gaps."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stdout

    def line(self, text: str) -> None:
        """Print one line, if the console is on."""
        if self.enabled:
            print(redact(text), file=self.stream, flush=True)

    def warning(self, text: str) -> None:
        """Something the user should know that does not stop the run, on stderr."""
        if self.enabled:
            print(f"warning: {text}", file=sys.stderr, flush=True)

    def start(self, worker: str, grader: str, rubric: str, scripted: bool) -> None:
        """The header: who works, who grades, which rubric."""
        label = "  [scripted models: replaying a script, no provider is called]" if scripted else ""
        self.line(f"rubric_runner: worker={worker} grader={grader} rubric={rubric}{label}")

    def turn(self, number: int, continues: str, rubric_carried_over: bool) -> None:
        """A follow-up turn begins: which turn, what it continues, and which rubric grades it."""
        rubric = "the rubric carried over from the turn before" if rubric_carried_over else "a new rubric"
        self.line(f"turn {number}, continuing {continues}; graded against {rubric}")

    def grading_started(self, iteration: int) -> None:
        """A grading pass begins."""
        self.line(f"-- grading iteration {iteration}")

    def tool(self, agent: str, name: str, output: str) -> None:
        """A tool call finished."""
        first = output.splitlines()[0] if output else ""
        self.line(f"   {agent} called {name} -> {first[:160]}")

    def verdict(self, event: dict[str, Any]) -> None:
        """A grading pass ended: the verdict and each failing criterion's gap."""
        self.line(f"   verdict: {event.get('result')} - {event.get('explanation') or ''}".rstrip(" -"))
        for criterion in event.get("criteria") or []:
            if not criterion.get("passed"):
                self.line(f"     x {criterion.get('name')}: {criterion.get('gap', '')}")

    def progress(self, done: int, total: int, satisfied: int, tokens: int, spend: str = "") -> None:
        """One rewritten status line for multi-task runs, only on a terminal; ``spend``: against the budgets."""
        if self.enabled and sys.stderr.isatty():
            end = "\n" if done == total else ""
            line = f"tasks {done}/{total}  satisfied {satisfied}  tokens {tokens:,}" + (f"  {spend}" if spend else "")
            print(f"\r{line}", end=end, file=sys.stderr, flush=True)

    def summary(self, aggregate: dict[str, Any]) -> None:
        """The numbers of a multi-task run."""
        self.line(
            f"tasks {aggregate['tasks']} x repeats {aggregate['repeats']}: {aggregate['satisfied']}/{aggregate['runs']} satisfied"
            f" (pass@k {aggregate['pass_at_k']:.2f}, pass^k {aggregate['pass_hat_k']:.2f});"
            f" reused {aggregate['reused']}, re-run {aggregate['rerun']}, cache hits {aggregate['cache_hits']}"
        )

    def finish(self, status: str, iterations: int, run_dir: str, error: str | None = None) -> None:
        """The final status and where the record is."""
        if error:
            print(redact(f"error: {error}"), file=sys.stderr, flush=True)
        self.line(f"status: {status} after {iterations} grading iteration(s)")
        self.line(f"run dir: {run_dir}")
