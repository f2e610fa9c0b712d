"""How a SLURM sweep learns that a job ended without a result, with or without SLURM accounting.

submitit asks ``sacct`` only, and rarely (at most every 10 minutes): without accounting, or for an
array task cancelled while pending (which accounting keeps no state of), a job is never seen to end,
and the sweep waits for ever. ``QueueWatcher`` asks
``sacct`` while it answers and ``squeue`` every ``DELAY_SECONDS``: a job that has left the queue
with no state from accounting has ended (submitit then finds no result and says so), and what is
known of each job that did not complete is kept for the sweep's rows.
"""

from __future__ import annotations

import subprocess
import time

from submitit.slurm.slurm import SlurmInfoWatcher, SlurmJob

DELAY_SECONDS = 5
LEFT_QUEUE = "LEFT_QUEUE"
"""The state of a job ``squeue`` no longer lists and accounting does not know."""
UNFINISHED = {"READY", "PENDING", "RUNNING", "UNKNOWN", "REQUEUED", "COMPLETING", "PREEMPTED", "CONFIGURING",
              "SUSPENDED", "RESIZING"}


class QueueWatcher(SlurmInfoWatcher):
    """submitit's watcher, asking ``squeue`` as well as ``sacct``; ``why`` gets, by array task id, the
    state of each job that ended other than COMPLETED."""

    def __init__(self, why: dict[int, str]) -> None:
        super().__init__(delay_s=DELAY_SECONDS)
        self.why = why
        self.accounting = True

    def _run(self, command: list[str]) -> str | None:
        try:
            return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return None

    def _queue(self, main_ids: set[str]) -> dict[str, str] | None:
        """``{job_id: state}`` of the jobs ``squeue`` lists (array tasks one by one); None when it fails."""
        out = self._run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(sorted(main_ids))])
        if out is None:
            return None
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    def update(self) -> None:
        waiting = self._registered - self._finished
        command = self._make_command()
        if command is None:
            return
        self._num_calls += 1
        if self.accounting:
            out = self._run(command)
            self.accounting = out is not None
            if out is not None:
                self._info_dict.update(self.read_info(out))
        queue = self._queue({job_id.split("_")[0] for job_id in waiting})
        if queue is not None:
            for job_id in waiting:
                known = self._info_dict.get(job_id, {}).get("State", "UNKNOWN")
                if job_id in queue:
                    self._info_dict[job_id] = {"State": queue[job_id]}
                elif known.split(" ")[0].upper() in UNFINISHED:
                    self._info_dict[job_id] = {"State": LEFT_QUEUE}
        self._last_status_check = time.time()
        for job_id in waiting:
            if self.is_done(job_id, mode="cache"):
                self._finished.add(job_id)
                self._note(job_id)

    def _note(self, job_id: str) -> None:
        """Keep what is known of a job that ended other than COMPLETED, by its number in the sweep (its
        array task id; 0 for a sweep of one job, submitted alone)."""
        state = self.get_state(job_id, mode="cache")
        _, _, task = job_id.partition("_")
        if state.upper() != "COMPLETED" and (task.isdigit() or not task):
            left = state == LEFT_QUEUE
            self.why[int(task or 0)] = (
                f"SLURM job {job_id} left the queue without a result, with no state in accounting "
                "(cancelled while pending, or ended by SLURM)" if left else f"SLURM job {job_id} {state}")


def watch_queue(why: dict[int, str]) -> None:
    """Make this process's submitit jobs use a ``QueueWatcher`` that fills ``why``."""
    SlurmJob.watcher = QueueWatcher(why)
