"""The summary files, the one-line verdict of a set of runs and what their budgets spent.

``summary.jsonl`` / ``summary.csv``: one row per job, with its grader's figures against hidden
verification (``judge.SUMMARY_FIELDS``); ``summary_tasks.jsonl`` / ``summary_tasks.csv``: one row per
run (a task x repeat of a job, or a single-task job), with its answers' verification."""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..analysis.judge import SUMMARY_FIELDS as JUDGE_FIELDS
from ..analysis.judge import summary_fields
from ..analysis.prices import load_prices
from ..records import Job, Status, satisfied_rate
from .runs import Run, expand, judge_runs, record_row

SUMMARY_JSONL = "summary.jsonl"
SUMMARY_CSV = "summary.csv"
TASKS_JSONL = "summary_tasks.jsonl"
TASKS_CSV = "summary_tasks.csv"
SUMMARY_FIELDS = (
    "job", "overrides", "worker", "grader", "rubric", "turn", "status", "exit_code", "iterations", "runs", "satisfied",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "wall_seconds", "error", "run_dir", *JUDGE_FIELDS,
)
TASK_FIELDS = (
    "job", "task_id", "repeat", "worker", "grader", "rubric", "turn", "status", "exit_code", "iterations",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "wall_seconds", "error", "run_dir",
    "verified_first", "verified_final",
)


def run_row(run: Run) -> dict[str, Any]:
    """One run's row: its job, task and repeat, what ran, how it ended, tokens, wall time, where it is."""
    own = {"job": run.job.job, "status": run.status.value, "reused": int(run.reused)}
    return {key: own[key] if key in own else getattr(run, key) for key in TASK_FIELDS}


def job_row(job: Job, runs: list[Run], prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    """One job's row: as its record says (a multi-task job's status is its worst task's), with its
    ``runs``, how many of them ended ``satisfied``, and its grader's figures against verification."""
    row = record_row(job.record.header, job.record)
    return {key: row.get(key) for key in SUMMARY_FIELDS} | {
        "job": job.job, "overrides": list(job.record.header.sources.overrides), "reused": job.reused,
        "runs": len(runs), "satisfied": sum(run.status is Status.SATISFIED for run in runs),
    } | summary_fields(judge_runs(runs, prices))


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``path`` (``text``, or its pieces as they come) whole or not at all: a reader (or a second
    writer) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as file:
            file.writelines([text] if isinstance(text, str) else text)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


_JSON = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(row, ensure_ascii=False)`` without making an encoder for each row."""


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(_JSON.encode(row) + "\n" for row in rows)


def _csv(rows: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(fields)
    for row in rows:
        row = {**row, "overrides": " ".join(row["overrides"])} if "overrides" in row else row
        writer.writerow([row[field] for field in fields])
    return out.getvalue()


def write_summary(root: Path, jobs: list[Job], runs: list[Run] | None = None,
                  prices_path: str | Path | None = None) -> list[Path]:
    """The per-job and per-run summary files in ``root`` (``runs``: ``expand(jobs)``; costs from the
    price table at ``prices_path``, else conf/prices.yaml); returns their paths."""
    runs = expand(jobs) if runs is None else runs
    prices = load_prices(prices_path)
    by_job: dict[int, list[Run]] = {}
    for run in runs:
        by_job.setdefault(id(run.job), []).append(run)
    job_rows = [job_row(job, by_job.get(id(job), []), prices) for job in jobs]
    files = {
        SUMMARY_JSONL: _jsonl(job_rows), SUMMARY_CSV: _csv(job_rows, SUMMARY_FIELDS),
        TASKS_JSONL: _jsonl(map(run_row, runs)), TASKS_CSV: _csv(map(run_row, runs), TASK_FIELDS),
    }
    for name, text in files.items():
        write_atomic(root / name, text)
    return [root / name for name in files]


def verdict_line(jobs: list[Job], runs: list[Run], fail_under: float | None) -> str:
    """One line: how many runs ended how (in how many jobs, when that differs), the satisfied rate,
    and the threshold if any."""
    statuses: list[Status] = [run.status for run in runs]
    counts = Counter(status.value for status in statuses)
    parts = ", ".join(f"{n} {status}" for status, n in counts.most_common())
    line = f"{len(runs)} run{'' if len(runs) == 1 else 's'}"
    if len(jobs) != len(runs):
        line += f" in {len(jobs)} job{'' if len(jobs) == 1 else 's'}"
    line += f": {parts}; satisfied rate {satisfied_rate(statuses):.1%}"
    cache_hits = sum(run.cache_hits for run in runs)
    reused = sum(run.reused for run in runs)
    if cache_hits or reused:
        line += f"; cache hits {cache_hits}, reused {reused}"
    if fail_under is not None:
        line += f" (fail_under {fail_under:.1%})"
    return line


def progress_line(jobs: list[Job], runs: list[Run], jobs_total: int | None, runs_total: int | None) -> str:
    """``3 of 6 jobs done, 47 runs done`` (of one job: ``47 of 120 runs done``): how far a sweep or a
    run still going has come."""
    def done(statuses: list[Status], total: int | None, noun: str) -> str:
        finished = sum(status is not Status.RUNNING for status in statuses)
        if total:
            return f"{finished} of {max(total, len(statuses))} {noun}s done"
        return f"{finished} {noun}{'' if finished == 1 else 's'} done"

    run_statuses = [run.status for run in runs]
    if len(jobs) == 1 and jobs_total == 1:
        return done(run_statuses, runs_total, "run")
    return f"{done([job.record.status for job in jobs], jobs_total, 'job')}, {done(run_statuses, runs_total, 'run')}"
