"""The live trail a person reads while a run goes on.

Every line goes through ``write_line``: when the reader of stdout or stderr goes away (``| head``), that
stream is quietly sent to /dev/null from then on, and the run goes on to its end.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from ..analysis.numbers import fmt_num, fmt_tokens
from ..records.status import Status
from ..redaction import redact

SCRIPTED_LABEL = " (scripted: replays a script, no provider is called)"
LIVE_AFTER = 1.0
"""Seconds a model call runs before the live line shows it."""


def _to_devnull(stream: TextIO) -> None:
    """Point the file descriptor under ``stream`` at /dev/null: later writes succeed and go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no descriptor to point anywhere (a test's buffer)
        pass


def write_line(text: str, stream: TextIO, end: str = "\n") -> None:
    """Write ``text`` and ``end`` to ``stream`` and flush; a reader that went away silences the stream."""
    try:
        stream.write(text + end)
        stream.flush()
    except BrokenPipeError:
        _to_devnull(stream)


class LiveLine:
    """On a terminal, one line on stderr rewritten each second while model calls run: role and seconds."""

    def __init__(self) -> None:
        self._calls: dict[Any, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._shown = False

    def started(self, key: Any, role: str) -> None:
        """A model call began."""
        with self._lock:
            self._calls[key] = (role, time.monotonic())
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, name="rubric-runner-live-line", daemon=True)
                self._ticker.start()

    def ended(self, key: Any) -> None:
        """A model call returned or failed."""
        with self._lock:
            self._calls.pop(key, None)
            if not self._calls:
                self._clear()

    def clear(self) -> None:
        """Take the line off the screen before another line is printed."""
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._shown:
            write_line("\r\033[K", sys.stderr, end="")
            self._shown = False

    def _tick(self) -> None:
        while True:
            time.sleep(LIVE_AFTER)
            with self._lock:
                if not self._calls:
                    self._ticker = None
                    return
                now = time.monotonic()
                running = [f"{role} model call {now - since:.0f}s" for role, since in self._calls.values() if now - since >= LIVE_AFTER]
                if running:
                    write_line(f"\r\033[K  ... {', '.join(running)}", sys.stderr, end="")
                    self._shown = True


EXCERPT_LINES = 3
"""Lines of each attempt the trail shows (the whole text is in transcript.json)."""
EXCERPT_WIDTH = 100
"""Characters of each line the trail shows."""
TOOL_WIDTH = 240
"""Characters the trail shows of what a tool call returned."""


def printable(text: str) -> str:
    """One line of model or tool output made safe for a terminal: tabs as spaces, other controls as '?'."""
    return "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in text)


def excerpt(text: str) -> list[str]:
    """At most ``EXCERPT_LINES`` lines of ``text``, each cut at ``EXCERPT_WIDTH`` characters."""
    lines = text.strip("\n").splitlines() or [""]
    shown = [
        printable(line) if len(line) <= EXCERPT_WIDTH else f"{printable(line[:EXCERPT_WIDTH])}..."
        for line in lines[:EXCERPT_LINES]
    ]
    if len(lines) > EXCERPT_LINES:
        shown.append(f"... (+{len(lines) - EXCERPT_LINES} lines)")
    return shown


class Console:
    """Prints short lines: what is being graded, each verdict, failing criteria and gaps."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stdout
        self.live = LiveLine() if enabled and sys.stderr.isatty() else None

    def line(self, text: str) -> None:
        """Print one line, if the console is on."""
        if self.enabled:
            if self.live is not None:
                self.live.clear()
            write_line(redact(text), self.stream)

    def model_call_started(self, key: Any, role: str) -> None:
        """A model call began (the live line counts its seconds on a terminal)."""
        if self.live is not None:
            self.live.started(key, role)

    def model_call_ended(self, key: Any) -> None:
        """A model call returned or failed."""
        if self.live is not None:
            self.live.ended(key)

    def warning(self, text: str) -> None:
        """Something the user should know that does not stop the run, on stderr."""
        if self.enabled:
            write_line(f"warning: {text}", sys.stderr)

    def start(self, worker: str, grader: str, rubric: str, scripted: set[str]) -> None:
        """The header: who works, who grades (each labelled if it replays a script), which rubric."""
        worker += SCRIPTED_LABEL if "worker" in scripted else ""
        grader += SCRIPTED_LABEL if "grader" in scripted else ""
        self.line(f"rubric_runner: worker={worker} grader={grader} rubric={rubric}")

    def strategy(self, setting: str, strategy: str, probe: dict[str, str] | None) -> None:
        """How the grader's verdict comes back, and what auto's probe of the server found."""
        found = f" (probe: {'; '.join(f'{name} {result}' for name, result in probe.items())})" if probe else ""
        chosen = f"{setting} -> {strategy}" if strategy != setting else setting
        self.line(f"grader.structured_output={chosen}{found}")

    def turn(self, number: int, continues: str, rubric_carried_over: bool) -> None:
        """A follow-up turn begins: which turn, what it continues, and which rubric grades it."""
        rubric = "the rubric carried over from the turn before" if rubric_carried_over else "a new rubric"
        self.line(f"turn {number}, continuing {continues}; graded against {rubric}")

    def grading_started(self, iteration: int) -> None:
        """A grading pass begins; passes are counted from 1, as the final count is."""
        self.line(f"-- grading pass {iteration + 1}")

    def attempt(self, text: str) -> None:
        """The worker's answer about to be graded, as a short excerpt."""
        lines = text.strip("\n").splitlines()
        self.line(f"   worker answered ({len(lines)} line{'s' if len(lines) != 1 else ''}, {len(text)} chars):")
        for line in excerpt(text):
            self.line(f"   | {line}")

    def tool(self, agent: str, name: str, output: str) -> None:
        """A tool call finished, or was refused: the start of what the model was told, on one line."""
        self.line(f"   {agent} called {name} -> {printable(' '.join(output.split())[:TOOL_WIDTH])}")

    def verdict(self, event: dict[str, Any]) -> None:
        """A grading pass ended: the verdict and each failing criterion's gap (a grader_error's cause
        is the run's error line)."""
        if event.get("result") == "grader_error":
            self.line("   verdict: grader_error")
            return
        unverified = " (unverified)" if event.get("unverified") else ""
        self.line(f"   verdict: {event.get('result')}{unverified} - {event.get('explanation') or ''}".rstrip(" -"))
        for criterion in event.get("criteria") or []:
            if not criterion.get("passed"):
                self.line(f"     x {criterion.get('name')}: {criterion.get('gap', '')}")

    def progress(self, done: int, total: int, satisfied: int, tokens: int, spend: str = "") -> None:
        """One rewritten status line for multi-task runs, only on a terminal; ``spend``: against the budgets."""
        if self.enabled and sys.stderr.isatty():
            end = "\n" if done == total else ""
            line = f"tasks {done}/{total}  satisfied {satisfied}  tokens {fmt_tokens(tokens)}" + (f"  {spend}" if spend else "")
            write_line(f"\r{line}", sys.stderr, end=end)

    def summary(self, aggregate: dict[str, Any]) -> None:
        """The numbers of a multi-task run, over its decided runs: satisfied@k and satisfied^k are the
        grader's verdicts, k stated (the hidden checks' pass@k is in its reports); its crashed runs are
        counted beside them; a run not finished says how far it came instead, its figures being in its
        reports. ``n/a`` where no run was decided."""
        runs, decided = aggregate["runs"], aggregate["decided"]
        statuses = {Status(status): n for status, n in aggregate["statuses"].items()}
        unfinished = sum(n for status, n in statuses.items() if status.unfinished)
        crashed = {status.value: n for status, n in statuses.items() if not status.decided and not status.unfinished}
        if decided:
            satisfied = f"{aggregate['satisfied']}/{decided} {'decided runs ' if decided < runs else ''}satisfied"
        else:
            satisfied = "satisfied n/a: no run decided"
        if unfinished:
            satisfied += f" (partial: {runs - unfinished} of {runs} runs finished)"
        elif decided:
            k = aggregate["k"]
            satisfied += f" (satisfied@{k} {fmt_num(aggregate['pass_at_k'])}, satisfied^{k} {fmt_num(aggregate['pass_hat_k'])})"
        if crashed:
            satisfied += f", {sum(crashed.values())} crashed ({', '.join(f'{status} {n}' for status, n in crashed.items())})"
        self.line(
            f"tasks {aggregate['tasks']} x repeats {aggregate['repeats']}: {satisfied};"
            f" reused {aggregate['reused']}, re-run {aggregate['rerun']}, cache hits {aggregate['cache_hits']}"
        )

    def finish(self, status: str, iterations: int, run_dir: str, error: str | None = None) -> None:
        """The final status and where the record is."""
        if error:
            if self.live is not None:
                self.live.clear()
            write_line(redact(f"error: {error}"), sys.stderr)
        self.line(f"status: {status} after {iterations} grading pass(es)")
        self.line(f"run dir: {run_dir}")
