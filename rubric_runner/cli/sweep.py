"""A sweep's summary files and reports, refreshed as each job ends and written at its end from the
jobs' records on disk, and its exit code.

Everything here reads the jobs' ``result.json`` files, never the launcher's return values: jobs may
run in other processes or machines. A multi-task job counts as its tasks x repeats, for the
reports, the exit code and ``sweep.fail_under`` alike. At the end, the sweep waits (a bounded time)
for jobs whose process still works on this machine, and each job it planned that left no record
(cancelled, lost with its node, never started) is given one, ``interrupted`` with a ``DidNotRun``
error saying why where known: a row like any other, and the sweep exits 3. ``SweepSummary`` is the Hydra callback (``hydra.callbacks`` in
conf/config.yaml) that holds the sweep's state; the command line, which drives Hydra, asks it to
``conclude()`` however the sweep ended (Hydra skips ``on_multirun_end`` when a job failed).
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ..compat.hydra import job_exception
from ..records import (
    DID_NOT_RUN,
    RESULT_FILE,
    ConfigSources,
    ErrorInfo,
    ExitCode,
    Job,
    RunHeader,
    RunRecord,
    Status,
    collect,
    crash_record,
    find_run_dirs,
    now,
    read_record,
    sweep_exit_code,
    write_record,
)
from ..redaction import redact_override

OWNER_WAIT_SECONDS = 300.0
"""How long the end of a sweep waits for jobs whose process still works on this machine."""
NUMBERED_SUBDIR = "${hydra.job.num}"


@dataclass
class Sweep:
    """What a sweep needs to conclude: where its jobs are, its gate, its price table, when it started,
    and how many jobs it has (when the sweeper runs every combination of the swept values)."""

    dir: Path
    fail_under: float | None
    prices: str | None
    started_at: str
    jobs: int | None = None
    planned: list[list[str]] | None = None
    """Each job's overrides, in Hydra's order (with the basic sweeper)."""
    relative: bool = False
    """``hydra.sweep.dir`` was given as a relative path."""
    numbered: bool = True
    """Each job's dir is its number (``hydra.sweep.subdir`` as by default)."""
    why: dict[int, str] = field(default_factory=dict)
    """What the engine said of jobs that did not end (by job number), where it said anything."""


class SweepSummary(Callback):
    """Hydra callback: checks a sweep's own settings before any job, records crashed jobs, and
    writes the summary and reports when the sweep ends."""

    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.code: ExitCode | None = None

    def begin(self, config: DictConfig) -> None:
        """Remember the sweep (its settings were checked with each job's config); a Ray cluster's address
        must answer."""
        from ..report.partial import planned_overrides

        if "RayLauncher" in str(OmegaConf.select(config, "hydra.launcher._target_")):
            from .engine_errors import check_ray_address

            check_ray_address(OmegaConf.select(config, "hydra.launcher.ray.init.address"))
        given = Path(str(config.hydra.sweep.dir))
        planned = planned_overrides(config)
        subdir = cast(dict[str, Any], OmegaConf.to_container(config.hydra.sweep, resolve=False)).get("subdir")
        self.sweep = Sweep(given.absolute(), OmegaConf.select(config, "sweep.fail_under"),
                           OmegaConf.select(config, "sweep.prices"), now(), None if planned is None else len(planned),
                           planned, relative=not given.is_absolute(), numbered=subdir == NUMBERED_SUBDIR)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Begin, unless whoever drives Hydra did already; on SLURM, watch the queue as well as accounting."""
        if self.sweep is None:
            self.begin(config)
        if "SlurmLauncher" in str(OmegaConf.select(config, "hydra.launcher._target_")):
            from .slurm_queue import watch_queue

            assert self.sweep is not None  # begun just above, or by whoever drives Hydra
            watch_queue(self.sweep.why)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """A job whose function raised gets a final record naming the exception; then the sweep's
        summary and reports are refreshed (in the job's process, which may be on another machine)."""
        if job_return.status == JobStatus.FAILED:
            run_dir = Path(str(config.hydra.runtime.output_dir))
            partial = read_record(run_dir / RESULT_FILE)
            if partial is None or partial.status == "running":
                write_record(run_dir / RESULT_FILE, crash_record(run_dir, ErrorInfo.of(job_exception(job_return)), partial))
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

    def conclude(self, interrupted: bool = False, failure: BaseException | None = None) -> ExitCode:
        """Write the summary and reports from the job dirs (once) and return the sweep's exit code:
        ``USAGE`` when no job left a record (the launcher failed, or a relative sweep dir), ``INTERRUPTED``
        when the sweep was interrupted (its jobs stopped by Ctrl-C's ``SWEEP_STOP_FILE`` included). ``failure``:
        what the launcher raised, if it raised."""
        from ..loop.signals import SWEEP_STOP_FILE

        if self.code is not None:
            return self.code
        if self.sweep is None:
            self.code = ExitCode.USAGE
            return self.code
        interrupted = interrupted or (self.sweep.dir / SWEEP_STOP_FILE).is_file()
        from ..analysis.spend import spend_lines
        from ..report import expand, gate_statuses, verdict_line, write_all
        from ..report.live import sweep_lock
        from ..report.partial import completion
        from .engine_errors import engine_failure, engine_took_jobs

        sweep = self.sweep
        if not interrupted:
            _wait_for_owners(sweep.dir, OWNER_WAIT_SECONDS)
        launched = failure is None or bool(sweep.dir.is_dir() and find_run_dirs(sweep.dir)) or engine_took_jobs()
        if not launched and failure is not None:  # the engine refused the sweep: its own words, and what to do
            self.code = ExitCode.USAGE
            print(f"error: {engine_failure(failure)}", file=sys.stderr, flush=True)
            return self.code
        if failure is not None:
            print(f"note: the launcher ended with {engine_failure(failure, fix=False)}", file=sys.stderr, flush=True)
        if sweep.relative and not (sweep.dir.is_dir() and find_run_dirs(sweep.dir)) and not interrupted:
            self.code = ExitCode.USAGE
            print(f"error: the jobs left no records under {sweep.dir}: a relative hydra.sweep.dir resolves "
                  "in each job's working directory (give an absolute path on storage every machine shares)",
                  file=sys.stderr, flush=True)
            return self.code
        with sweep_lock(sweep.dir) if sweep.dir.is_dir() else contextlib.nullcontext():
            jobs = collect(sweep.dir, since=sweep.started_at)
            if not interrupted:
                jobs += _did_not_run(sweep, jobs, failure)
            runs = expand(jobs)
            paths = write_all(sweep.dir, jobs, runs, sweep.prices) if jobs else []
        done = completion(jobs, runs, sweep.jobs)
        if not jobs and not interrupted:
            print(f"error: the jobs left no records under {sweep.dir}", file=sys.stderr, flush=True)
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


def _wait_for_owners(sweep_dir: Path, seconds: float) -> None:
    """Wait, at most ``seconds``, while a job's record says ``running`` and its process still works on this
    machine (a launcher that stopped at one job's failure leaves the others going)."""
    from ..loop.lock import owner_alive

    deadline = time.monotonic() + seconds
    dirs = [Path(path) for path in find_run_dirs(sweep_dir)] if sweep_dir.is_dir() else []
    for run_dir in dirs:
        while time.monotonic() < deadline:
            record = read_record(run_dir / RESULT_FILE)
            if record is None or record.status is not Status.RUNNING or not owner_alive(run_dir):
                break
            time.sleep(1.0)


def _did_not_run(sweep: Sweep, jobs: list[Job], failure: BaseException | None) -> list[Job]:
    """A job, with a record written in its dir (when dirs are numbered), for each planned job that left
    none: ``interrupted``, its error saying why where the engine said."""
    from .engine_errors import engine_failure

    if not sweep.planned:
        return []
    names = {job.job for job in jobs}
    recorded = {tuple(_plain(job.record.header.sources.overrides)) for job in jobs}
    missing = []
    for number, overrides in enumerate(sweep.planned):
        name = str(number) if sweep.numbered else f"job {number}"
        if name in names or tuple(_plain(overrides)) in recorded:
            continue
        why = sweep.why.get(number) or (engine_failure(failure, fix=False) if failure is not None else "")
        message = f"the job did not run: {why}" if why else "the job did not run: it left no record (never started, or lost)"
        record = RunRecord(header=RunHeader(sources=ConfigSources(overrides=_plain(overrides))),
                           status=Status.INTERRUPTED, exit_code=int(Status.INTERRUPTED.exit_code),
                           error=ErrorInfo(type=DID_NOT_RUN, message=message), ended_at=now())
        if sweep.numbered:
            run_dir = sweep.dir / name
            record.run_dir = str(run_dir)
            try:
                run_dir.mkdir(exist_ok=True)
                if not (run_dir / RESULT_FILE).exists():
                    write_record(run_dir / RESULT_FILE, record)
            except OSError as exc:
                print(f"warning: no record written for job {name}: {exc}", file=sys.stderr, flush=True)
        missing.append(Job(name, record))
    return missing


def _plain(overrides: list[str]) -> list[str]:
    """Overrides as a job's record keeps them: secrets redacted, without ``run.resume``."""
    from ..loop.launch import plain

    return [redact_override(o) for o in plain(ConfigSources(overrides=list(overrides))).overrides]
