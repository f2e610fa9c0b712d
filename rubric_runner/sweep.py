"""Sweeps: job records collected from disk, summary.jsonl / summary.csv, the sweep's exit code.

Everything here reads the jobs' ``result.json`` files, never the launcher's return values: jobs may
run in other processes or machines. A job dir without a final record (the job raised before
``run()`` could record it, or its process died) still yields a record, with status ``error`` and
its cause. ``SweepSummary`` is the Hydra callback that writes the files when a multirun ends;
``finish()`` does the same when Hydra skipped that callback because a job failed.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from .runlog import CONFIG_ERROR_EXIT, EXIT_CODES, RunResult, write_json
from .runner import RESULT_FILE
from .session import now

SUMMARY_JSONL = "summary.jsonl"
SUMMARY_CSV = "summary.csv"
SUMMARY_FIELDS = (
    "job", "overrides", "worker", "grader", "rubric", "status", "exit_code", "iterations",
    "worker_tokens", "grader_tokens", "cache_hits", "reused", "wall_seconds", "error", "run_dir",
)
UNSATISFIED = ("max_iterations_reached", "failed", "unsupported")
SWEEP_EXIT = {"satisfied": 0, "unsatisfied": 1, "error": 3, "below_threshold": 4}
"""Exit codes of a sweep (and of ``rubric-runner report --fail-under``)."""


def outcome(status: str | None) -> str:
    """``satisfied``, ``unsatisfied`` or ``error`` (any other status, a crash included)."""
    if status == "satisfied":
        return "satisfied"
    return "unsatisfied" if status in UNSATISFIED else "error"


def _is_run_dir(path: Path) -> bool:
    return (path / RESULT_FILE).is_file() or (path / ".hydra" / "overrides.yaml").is_file()


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def find_run_dirs(root: Path) -> list[Path]:
    """``root`` if it is a run dir, else every run dir below it (a sweep's jobs), in job order."""
    if _is_run_dir(root):
        return [root]
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        path = Path(dirpath)
        if path != root and _is_run_dir(path):
            found.append(path)
            dirnames.clear()
        else:
            dirnames[:] = [name for name in dirnames if not name.startswith(".")]
    return sorted(found, key=lambda p: _natural_key(p.relative_to(root)))


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def _fill_from_hydra(record: dict[str, Any], run_dir: Path) -> None:
    """What ran, from the config Hydra saved, where the record does not say (it failed early)."""
    wanted = (("worker", "model"), ("grader", "model"), ("rubric", "name"))
    if record.get("overrides") and all((record.get(role) or {}).get(key) for role, key in wanted):
        return
    config = _read_yaml(run_dir / ".hydra" / "config.yaml") or {}
    for role, key in wanted:
        value = (config.get(role) or {}).get(key)
        if not (record.get(role) or {}).get(key) and isinstance(value, str):
            record[role] = {**(record.get(role) or {}), key: value}
    if not record.get("overrides"):
        overrides = _read_yaml(run_dir / ".hydra" / "overrides.yaml")
        record["overrides"] = overrides if isinstance(overrides, list) else []


def crash_record(run_dir: Path, error: dict[str, str], partial: dict[str, Any] | None = None) -> dict[str, Any]:
    """The final record of a job that ended without one: status ``error``, ``error`` its cause."""
    record = {
        **asdict(RunResult()),
        **(partial or {}),
        "status": "error",
        "exit_code": EXIT_CODES["error"],
        "error": error,
        "run_dir": str(run_dir),
    }
    _fill_from_hydra(record, run_dir)
    return record


def load_record(run_dir: Path) -> dict[str, Any]:
    """The run's ``result.json``, or a crash record saying why there is no final one."""
    try:
        record = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return crash_record(run_dir, {"type": "NoRecord", "message": "the job ended before writing result.json"})
    except (OSError, ValueError) as exc:
        return crash_record(run_dir, {"type": "BadRecord", "message": f"result.json is unreadable: {exc}"})
    if record.get("status") == "running":
        message = "result.json still says running: the job's process died (or it is still going)"
        return crash_record(run_dir, {"type": "Unfinished", "message": message}, record)
    _fill_from_hydra(record, run_dir)
    return record


def collect(root: str | Path, since: str | None = None) -> list[dict[str, Any]]:
    """The record of every run under ``root``, each with ``job`` (its dir relative to ``root``)
    and ``run_dir`` (where it is now, should the dir have moved since).

    With ``since`` (when a resumed sweep started), a run that had ended before then counts as
    ``reused``; a multi-task run's aggregate counts its reused tasks itself.
    """
    root = Path(root)
    records = []
    for run_dir in find_run_dirs(root):
        record = load_record(run_dir)
        record.update(job=run_dir.relative_to(root).as_posix(), run_dir=str(run_dir))
        ended = record.get("ended_at")
        reused = (record.get("aggregate") or {}).get("reused", 0)
        record["reused"] = reused or int(bool(since and ended and ended < since))
        records.append(record)
    return records


def summary_row(record: dict[str, Any]) -> dict[str, Any]:
    """One summary row: what ran, how it ended, tokens, wall time, where its record is."""
    usage = record.get("usage") or {}
    error = record.get("error") or {}
    return {
        "job": record.get("job"),
        "overrides": list(record.get("overrides") or []),
        "worker": (record.get("worker") or {}).get("model"),
        "grader": (record.get("grader") or {}).get("model"),
        "rubric": (record.get("rubric") or {}).get("name"),
        "status": record.get("status"),
        "exit_code": record.get("exit_code"),
        "iterations": record.get("iterations") or 0,
        "worker_tokens": (usage.get("worker") or {}).get("total_tokens", 0),
        "grader_tokens": (usage.get("grader") or {}).get("total_tokens", 0),
        "cache_hits": sum((counts or {}).get("cached_calls", 0) for counts in usage.values()),
        "reused": record.get("reused", 0),
        "wall_seconds": record.get("wall_seconds"),
        "error": f"{error.get('type')}: {error.get('message')}" if error else "",
        "run_dir": record.get("run_dir"),
    }


def write_summary(root: Path, records: list[dict[str, Any]]) -> None:
    """``summary.jsonl`` and ``summary.csv`` in ``root``: one row per job."""
    rows = [summary_row(record) for record in records]
    with open(root / SUMMARY_JSONL, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(root / SUMMARY_CSV, "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=SUMMARY_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "overrides": " ".join(row["overrides"])})


def satisfied_rate(records: list[dict[str, Any]]) -> float:
    """The fraction of runs that ended satisfied (jobs in error count as not satisfied)."""
    return sum(r.get("status") == "satisfied" for r in records) / len(records) if records else 0.0


def exit_code(records: list[dict[str, Any]], fail_under: float | None = None) -> int:
    """0 all satisfied, 1 some unsatisfied, 3 some in error; with ``fail_under``: 0 or 4 by the rate."""
    if fail_under is not None:
        return SWEEP_EXIT["satisfied"] if satisfied_rate(records) >= fail_under else SWEEP_EXIT["below_threshold"]
    outcomes = {outcome(r.get("status")) for r in records}
    for worst in ("error", "unsatisfied"):
        if worst in outcomes:
            return SWEEP_EXIT[worst]
    return SWEEP_EXIT["satisfied"]


def verdict_line(records: list[dict[str, Any]], fail_under: float | None) -> str:
    """One line: how many jobs ended how, the satisfied rate, and the threshold if any."""
    counts = Counter(record.get("status") for record in records)
    parts = ", ".join(f"{n} {status}" for status, n in counts.most_common())
    line = f"{len(records)} run{'' if len(records) == 1 else 's'}: {parts}; satisfied rate {satisfied_rate(records):.1%}"
    rows = [summary_row(record) for record in records]
    cache_hits, reused = sum(row["cache_hits"] for row in rows), sum(row["reused"] for row in rows)
    if cache_hits or reused:
        line += f"; cache hits {cache_hits}, reused {reused}"
    if fail_under is not None:
        line += f" (fail_under {fail_under:.1%})"
    return line


def write_all(root: Path, records: list[dict[str, Any]], prices: str | Path | None = None) -> list[Path]:
    """The summary files and both reports in ``root``; returns the paths written."""
    from .report import write_reports

    write_summary(root, records)
    return [root / SUMMARY_JSONL, root / SUMMARY_CSV, *write_reports(root, records, prices)]


@dataclass
class _Sweep:
    dir: Path
    fail_under: float | None
    prices: str | None
    started_at: str
    code: int | None = None


_current: _Sweep | None = None
"""The sweep this process started (set by ``SweepSummary.on_multirun_start``)."""


def finish(interrupted: bool = False) -> int | None:
    """Write the current sweep's files from its job dirs (once) and return its exit code.

    ``None`` when this process started no sweep; the config-error code when no job got a dir;
    130 when the sweep was ``interrupted``.
    """
    sweep = _current
    if sweep is None:
        return None
    if sweep.code is not None:
        return sweep.code
    records = collect(sweep.dir, since=sweep.started_at)
    if interrupted:
        sweep.code = EXIT_CODES["interrupted"]
    else:
        sweep.code = exit_code(records, sweep.fail_under) if records else CONFIG_ERROR_EXIT
    if records:
        paths = write_all(sweep.dir, records, sweep.prices)
        print(f"sweep: {verdict_line(records, sweep.fail_under)} -> exit {sweep.code}", flush=True)
        for path in paths:
            print(f"  {path}", flush=True)
    return sweep.code


class SweepSummary(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml): a sweep's summary and reports."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Remember the sweep dir and the gating options; a bad price table stops the sweep (exit 2)."""
        from .report import PriceError, load_prices

        global _current
        prices = OmegaConf.select(config, "sweep.prices")
        try:
            load_prices(prices)
        except PriceError as exc:
            print(f"error: sweep.prices: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(CONFIG_ERROR_EXIT) from None
        _current = _Sweep(
            dir=Path(str(config.hydra.sweep.dir)).absolute(),
            fail_under=OmegaConf.select(config, "sweep.fail_under"),
            prices=prices,
            started_at=now(),
        )

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """A job whose function raised gets a final record naming the exception."""
        if job_return.status != JobStatus.FAILED:
            return
        run_dir = Path(str(config.hydra.runtime.output_dir))
        try:
            partial = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            partial = None
        if partial and partial.get("status") != "running":
            return
        exc = job_return._return_value  # the public property re-raises it
        error = {"type": type(exc).__name__, "message": str(exc)}
        write_json(run_dir / RESULT_FILE, crash_record(run_dir, error, partial))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Every job is done: write the files (``rubric_runner.cli`` turns the code into the exit status)."""
        if _current is not None and not find_run_dirs(_current.dir):
            print(f"error: the jobs left no records under {_current.dir}: a relative hydra.sweep.dir resolves "
                  "in each job's working directory (give an absolute path on storage every machine shares)",
                  file=sys.stderr, flush=True)
        finish()
