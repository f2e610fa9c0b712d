"""A sweep's summary files and reports, refreshed as each job ends and written at its end from the
jobs' records on disk, and its exit code.

Everything here reads the jobs' ``result.json`` files, never the launcher's return values: jobs may
run in other processes or machines. A multi-task job counts as its tasks x repeats, for the
reports, the exit code and ``sweep.fail_under`` alike. ``SweepSummary`` is the Hydra callback (``hydra.callbacks`` in
conf/config.yaml) that holds the sweep's state; the command line, which drives Hydra, asks it to
``conclude()`` however the sweep ended (Hydra skips ``on_multirun_end`` when a job failed).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ..records import (
    RESULT_FILE,
    ErrorInfo,
    ExitCode,
    collect,
    crash_record,
    now,
    read_record,
    sweep_exit_code,
    write_record,
)


@dataclass
class Sweep:
    """What a sweep needs to conclude: where its jobs are, its gate, its price table, when it started,
    and how many jobs it has (when the sweeper runs every combination of the swept values)."""

    dir: Path
    fail_under: float | None
    prices: str | None
    started_at: str
    jobs: int | None = None


class SweepSummary(Callback):
    """Hydra callback: checks a sweep's own settings before any job, records crashed jobs, and
    writes the summary and reports when the sweep ends."""

    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.code: ExitCode | None = None

    def begin(self, config: DictConfig) -> None:
        """Remember the sweep (its settings were checked with each job's config)."""
        from ..report.partial import planned_jobs

        self.sweep = Sweep(Path(str(config.hydra.sweep.dir)).absolute(), OmegaConf.select(config, "sweep.fail_under"),
                           OmegaConf.select(config, "sweep.prices"), now(), planned_jobs(config))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Begin, unless whoever drives Hydra did already."""
        if self.sweep is None:
            self.begin(config)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """A job whose function raised gets a final record naming the exception; then the sweep's
        summary and reports are refreshed (in the job's process, which may be on another machine)."""
        if job_return.status == JobStatus.FAILED:
            run_dir = Path(str(config.hydra.runtime.output_dir))
            partial = read_record(run_dir / RESULT_FILE)
            if partial is None or partial.status == "running":
                exc = job_return._return_value  # the public property re-raises it
                write_record(run_dir / RESULT_FILE, crash_record(run_dir, ErrorInfo.of(exc), partial))
        if self.sweep is not None:
            self._refresh(self.sweep)

    @staticmethod
    def _refresh(sweep: Sweep) -> None:
        from ..report.live import refresh_sweep

        try:
            refresh_sweep(sweep.dir, sweep.prices, sweep.started_at, sweep.jobs)
        except Exception as exc:  # a report must never fail the job it reports on
            print(f"warning: the sweep's report was not refreshed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Every job is done: write the files."""
        self.conclude()

    def conclude(self, interrupted: bool = False) -> ExitCode:
        """Write the summary and reports from the job dirs (once) and return the sweep's exit code:
        ``USAGE`` when no job left a record, ``INTERRUPTED`` when the sweep was interrupted."""
        if self.code is not None:
            return self.code
        if self.sweep is None:
            self.code = ExitCode.USAGE
            return self.code
        from ..analysis.spend import spend_lines
        from ..report import expand, gate_statuses, verdict_line, write_all
        from ..report.live import sweep_lock
        from ..report.partial import completion

        sweep = self.sweep
        with sweep_lock(sweep.dir) if sweep.dir.is_dir() else contextlib.nullcontext():
            jobs = collect(sweep.dir, since=sweep.started_at)
            runs = expand(jobs)
            paths = write_all(sweep.dir, jobs, runs, sweep.prices) if jobs else []
        done = completion(jobs, runs, sweep.jobs)
        if not jobs and not interrupted:
            print(f"error: the jobs left no records under {sweep.dir}: a relative hydra.sweep.dir resolves "
                  "in each job's working directory (give an absolute path on storage every machine shares)",
                  file=sys.stderr, flush=True)
        if interrupted:
            self.code = ExitCode.INTERRUPTED
        else:
            self.code = sweep_exit_code(gate_statuses(jobs, runs), sweep.fail_under) if jobs else ExitCode.USAGE
        if jobs:
            print(f"sweep: {verdict_line(jobs, runs, sweep.fail_under, done)} -> exit {int(self.code)}", flush=True)
            for line in spend_lines([job.record for job in jobs]):
                print(f"  {line}", flush=True)
            for path in paths:
                print(f"  {path}", flush=True)
        return self.code
