"""``summary.jsonl`` and ``summary.csv``: one row per run, and the one-line verdict of a set of runs."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..records import Job, Status, satisfied_rate

SUMMARY_JSONL = "summary.jsonl"
SUMMARY_CSV = "summary.csv"
SUMMARY_FIELDS = (
    "job", "overrides", "worker", "grader", "rubric", "turn", "status", "exit_code", "iterations",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "wall_seconds", "error", "run_dir",
)


def summary_row(job: Job) -> dict[str, Any]:
    """One summary row: what ran, how it ended, tokens, wall time, where its record is."""
    record = job.record
    usage, error = record.usage, record.error
    return {
        "job": job.job,
        "overrides": list(record.overrides),
        "worker": record.worker.model,
        "grader": record.grader.model,
        "rubric": record.rubric.name,
        "turn": record.turn or 1,
        "status": record.status.value,
        "exit_code": record.exit_code,
        "iterations": record.iterations,
        "worker_tokens": usage["worker"].total_tokens if "worker" in usage else 0,
        "grader_tokens": usage["grader"].total_tokens if "grader" in usage else 0,
        "cache_hits": sum(counts.cached_calls for counts in usage.values()),
        "reused": job.reused,
        "wall_seconds": record.wall_seconds,
        "error": f"{error.type}: {error.message}" if error else "",
        "run_dir": record.run_dir,
    }


def write_summary(root: Path, jobs: list[Job]) -> list[Path]:
    """``summary.jsonl`` and ``summary.csv`` in ``root``: one row per job; returns their paths."""
    rows = [summary_row(job) for job in jobs]
    with open(root / SUMMARY_JSONL, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(root / SUMMARY_CSV, "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=SUMMARY_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "overrides": " ".join(row["overrides"])})
    return [root / SUMMARY_JSONL, root / SUMMARY_CSV]


def verdict_line(jobs: list[Job], fail_under: float | None) -> str:
    """One line: how many runs ended how, the satisfied rate, and the threshold if any."""
    statuses: list[Status] = [job.record.status for job in jobs]
    counts = Counter(status.value for status in statuses)
    parts = ", ".join(f"{n} {status}" for status, n in counts.most_common())
    line = f"{len(jobs)} run{'' if len(jobs) == 1 else 's'}: {parts}; satisfied rate {satisfied_rate(statuses):.1%}"
    rows = [summary_row(job) for job in jobs]
    cache_hits, reused = sum(row["cache_hits"] for row in rows), sum(row["reused"] for row in rows)
    if cache_hits or reused:
        line += f"; cache hits {cache_hits}, reused {reused}"
    if fail_under is not None:
        line += f" (fail_under {fail_under:.1%})"
    return line
