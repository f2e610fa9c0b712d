"""The summary files and the one-line verdict of a set of runs.

``summary.jsonl`` / ``summary.csv``: one row per job, computed from its runs (tasks x repeats), with
its grader's figures against hidden verification (``judge.SUMMARY_FIELDS``) and, on every row of a
set that did not finish, its ``partial`` line; ``summary_tasks.jsonl`` / ``summary_tasks.csv``: one
row per run (a task x repeat of a job, or a single-task job), with its answers' verification. Every
number is rounded by ``analysis.numbers``."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..analysis.judge import SUMMARY_FIELDS as JUDGE_FIELDS
from ..analysis.judge import summary_fields
from ..analysis.numbers import fmt_pct, rounded
from ..config.prices import load_prices
from ..records import Job, Place, Status, gated_share, satisfied_rate, write_atomic
from . import configs
from .partial import Completion, completion
from .runs import Run, expand, judge_runs, unstarted
from .stats import satisfied_at

SUMMARY_JSONL = "summary.jsonl"
SUMMARY_CSV = "summary.csv"
TASKS_JSONL = "summary_tasks.jsonl"
TASKS_CSV = "summary_tasks.csv"
SUMMARY_FIELDS = (
    "job", "overrides", "worker", "grader", "rubric", "turn", "status", "exit_code", "runs", "finished", "unfinished",
    "crashed", "satisfied", "satisfied_rate", "k", "satisfied_at_1", "satisfied_at_k", "satisfied_hat_k", "mean_passes_per_run",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "resumed", "attempts", "wall_seconds", "task_seconds",
    "error", "where", "run_dir", "partial", *JUDGE_FIELDS,
)
TASK_FIELDS = (
    "job", "task_id", "repeat", "worker", "grader", "rubric", "turn", "status", "exit_code", "iterations",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "resumed", "wall_seconds", "error", "run_dir",
    "verified_first", "verified_final",
)


def run_row(run: Run) -> dict[str, Any]:
    """One run's row: its job, task and repeat, what ran, how it ended, tokens, time, where it is."""
    own = {"job": run.job.job, "status": run.status.value, "reused": int(run.reused)}
    return {key: own[key] if key in own else getattr(run, key) for key in TASK_FIELDS}


def where(place: Place | None) -> str:
    """Where a run ran, in a few words: ``node1 pid 4242 slurm 17_1`` (``ray NODE``); empty when not recorded."""
    if place is None:
        return ""
    words = [place.host or "?", f"pid {place.pid}" if place.pid is not None else ""]
    if place.slurm_array_job_id:
        words.append(f"slurm {place.slurm_array_job_id}_{place.slurm_array_task_id}")
    elif place.slurm_job_id:
        words.append(f"slurm {place.slurm_job_id}")
    if place.ray_node_id:
        words.append(f"ray {place.ray_node_id[:12]}")
    return " ".join(word for word in words if word)


def job_row(job: Job, runs: list[Run], prices: dict[str, dict[str, float]], partial: str | None) -> dict[str, Any]:
    """One job's row, from its runs: its status as its record says (a multi-task job's is its worst
    task's), how many runs finished, crashed and were satisfied (the rate over the decided ones),
    satisfied@k, the mean grading passes per finished run, tokens and time summed over its runs, and its
    grader's figures."""
    record, header = job.record, job.record.header
    finished = [run for run in runs if run.finished]
    satisfied = sum(run.status is Status.SATISFIED for run in runs)
    rate = satisfied_rate(run.status for run in runs)
    error = record.error
    by_task = satisfied_at(runs)
    return {
        "job": job.job, "overrides": list(header.sources.overrides), "worker": header.worker.model,
        "grader": header.grader.model, "rubric": header.rubric.name, "turn": header.turn or 1,
        "status": record.status.value, "exit_code": record.exit_code, "runs": len(runs), "finished": len(finished),
        "unfinished": len(runs) - len(finished), "crashed": sum(not run.status.decided for run in finished),
        "satisfied": satisfied, "satisfied_rate": rounded(rate), "k": by_task["k"],
        **{key: rounded(by_task[key]) for key in ("satisfied_at_1", "satisfied_at_k", "satisfied_hat_k")},
        "mean_passes_per_run": rounded(sum(run.iterations for run in finished) / len(finished)) if finished else None,
        "worker_tokens": sum(run.worker_tokens for run in runs), "grader_tokens": sum(run.grader_tokens for run in runs),
        "cache_hits": sum(run.cache_hits for run in runs), "reused": job.reused, "resumed": record.resumed,
        "attempts": len(record.taken_over) + 1,
        "wall_seconds": rounded(record.wall_seconds, 3), "task_seconds": rounded(sum(run.wall_seconds or 0 for run in runs), 3),
        "error": f"{error.type}: {error.message}" if error else "", "where": where(record.place), "run_dir": record.run_dir,
        "partial": partial,
    } | summary_fields(judge_runs(runs, prices))


_JSON = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(row, ensure_ascii=False)`` without making an encoder for each row."""


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(_JSON.encode(row) + "\n" for row in rows)


def _csv(rows: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(fields)
    for row in rows:
        writer.writerow([" ".join(row[f]) if f == "overrides" else json.dumps(row[f]) if isinstance(row[f], dict)
                         else row[f] for f in fields])
    return out.getvalue()


def write_summary(root: Path, jobs: list[Job], runs: list[Run] | None = None,
                  prices_path: str | Path | None = None, done: Completion | None = None) -> list[Path]:
    """The per-job and per-run summary files in ``root`` (``runs``: ``expand(jobs)``; costs from the
    price table at ``prices_path``, else conf/prices.yaml; ``done``: how much of the set finished);
    returns their paths."""
    runs = expand(jobs) if runs is None else runs
    done = completion(jobs, runs) if done is None else done
    prices = load_prices(prices_path)
    by_job: dict[int, list[Run]] = {}
    for run in runs:
        by_job.setdefault(id(run.job), []).append(run)
    job_rows = [job_row(job, by_job.get(id(job), []), prices, done.line()) for job in jobs]
    files = {
        SUMMARY_JSONL: _jsonl(job_rows), SUMMARY_CSV: _csv(job_rows, SUMMARY_FIELDS),
        TASKS_JSONL: _jsonl(map(run_row, runs)), TASKS_CSV: _csv(map(run_row, runs), TASK_FIELDS),
    }
    for name, text in files.items():
        write_atomic(root / name, text)
    return [root / name for name in files]


def verdict_line(jobs: list[Job], runs: list[Run], fail_under: float | None, done: Completion | None = None) -> str:
    """One line: how much finished (when not all did), how many runs ended how (in how many jobs, when
    that differs), the satisfied rate over the decided runs (the crashed and the unfinished counted
    beside it; with more than one configuration, each one's own too), and the threshold if any (which
    counts every run, ``gated_share``)."""
    done = completion(jobs, runs) if done is None else done
    statuses: list[Status] = [run.status for run in runs]
    counts = Counter(status.value for status in statuses)
    parts = ", ".join(f"{n} {status}" for status, n in counts.most_common()) or "none"
    line = f"{done.line()}; " if done.partial else ""
    line += f"{len(runs)} run{'' if len(runs) == 1 else 's'}"
    if len(jobs) != len(runs):
        line += f" in {len(jobs)} job{'' if len(jobs) == 1 else 's'}"
    line += f": {parts}; satisfied rate {_rate(runs)}"
    decided = sum(run.status.decided for run in runs)
    if decided < len(runs):
        unfinished = sum(not run.finished for run in runs)
        beside = [f"{n} {what}" for n, what in ((len(runs) - decided - unfinished, "crashed"), (unfinished, "unfinished")) if n]
        line += f" of the {decided} decided, {', '.join(beside)}"
    line += _per_configuration(runs)
    cache_hits = sum(run.cache_hits for run in runs)
    reused = sum(run.reused for run in runs)
    if cache_hits or reused:
        line += f"; cache hits {cache_hits}, reused {reused}"
    if fail_under is not None:
        gated = gate_statuses(jobs, runs)
        over_all = "" if decided == len(gated) else f"; over every run and job not started: {fmt_pct(gated_share(gated))}"
        line += f" (fail_under {fmt_pct(fail_under)}{over_all})"
    return line


SHOWN_CONFIGURATIONS = 4
"""The most configurations whose own satisfied rate the verdict line names."""


def _rate(runs: list[Run]) -> str:
    """The satisfied rate of ``runs`` (``records.satisfied_rate``), or ``n/a`` when none was decided."""
    rate = satisfied_rate(run.status for run in runs)
    return "n/a" if rate is None else fmt_pct(rate)


def _per_configuration(runs: list[Run]) -> str:
    """When the runs are of more than one configuration: that the rate pools them, and each one's own
    satisfied rate over its decided runs (the first ``SHOWN_CONFIGURATIONS``)."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    if len(groups) < 2:
        return ""
    names = configs.group_labels((key, members[0].job.record.header) for key, members in groups.items())
    rates = [f"{names[key]}: {_rate(members)}" for key, members in list(groups.items())[:SHOWN_CONFIGURATIONS]]
    more = f"; {len(groups) - SHOWN_CONFIGURATIONS} more in the table" if len(groups) > SHOWN_CONFIGURATIONS else ""
    return f", pooled over {len(groups)} configurations ({'; '.join(rates)}{more})"


def gate_statuses(jobs: list[Job], runs: list[Run]) -> list[Status]:
    """What a sweep's exit code and ``fail_under`` count: every run's status, finished or not, and each
    job that did not start as one run in its status (an error: never a pass)."""
    return [*(run.status for run in runs), *(job.record.status for job in unstarted(jobs, runs))]
