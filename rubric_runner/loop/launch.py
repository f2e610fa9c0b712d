"""The one way work starts: a run, a sweep's job, ``rubric_runner.run``, resume, continue and regrade.

``launch`` composes the config from its sources (or takes the one Hydra composed for a sweep's job),
takes the run dir's lock, checks that a resume keeps the configuration it ran with, saves the config,
plans the run before any model call, and runs it. What goes wrong before the run dir is claimed raises
``UsageError``; anything after that ends in the run's record, which is returned however the run ended.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from ..config.compose import compose
from ..config.fingerprint import changed
from ..errors import UsageError, unwritable
from ..records import (
    DID_NOT_RUN,
    RESULT_FILE,
    ConfigSources,
    Place,
    RunHeader,
    RunRecord,
    Status,
    now,
    read_record,
    recorded_sources,
    turn_number,
)
from ..redaction import config_secrets, redact, redact_override
from .execute import Execution
from .lock import run_dir_lock
from .request import Launch

RESUME = "run.resume="
SWEEP_FILE = "multirun.yaml"
"""What Hydra writes in a sweep dir (and in no run dir)."""


def plain(sources: ConfigSources) -> ConfigSources:
    """``sources`` as a run records them: without ``run.resume``, which a resume adds itself."""
    return sources.model_copy(update={"overrides": [o for o in sources.overrides if not o.lstrip("+").startswith(RESUME)]})


def launch(request: Launch) -> RunRecord:
    """Compose, claim the run dir, save the config, plan and run; returns the run's record."""
    if request.composed is not None:
        cfg, run_dir = request.composed, request.run_dir
        assert run_dir is not None, "a composed config comes with its run dir"
    else:
        cfg = compose(request.sources, with_hydra=request.run_dir is None)
        run_dir = request.run_dir
        if run_dir is None:
            run_dir = Path(str(cfg.hydra.run.dir)).absolute()
            with open_dict(cfg):
                del cfg["hydra"]
    resume = request.resume or bool(OmegaConf.select(cfg, "run.resume"))
    request = replace(request, sources=plain(request.sources), resume=resume)
    with run_dir_lock(run_dir, request.key) as before:
        abandoned = None if resume else _abandoned(run_dir, request)
        if abandoned is not None:  # a new attempt of a sweep's job: resume the dead attempt's work
            request = replace(request, resume=True)
        previous = _claimed(run_dir, request)
        record = _record(run_dir, request, previous)
        if abandoned is not None and abandoned.status is Status.RUNNING:
            dead = abandoned.place or Place(host=before.get("host"), pid=before.get("pid"))
            record.taken_over = [*abandoned.taken_over, dead]
        execution = Execution(cfg, run_dir, request, record, previous)
        if request.resume:  # what a resume needs is there before anything in the dir is touched
            execution.ready()
        save_config(run_dir, cfg, request.sources, request.key)
        return execution.perform()


def _abandoned(run_dir: Path, request: Launch) -> RunRecord | None:
    """A sweep job's dir left by an earlier attempt of the same job whose process died (its lock is now
    ours, its record still says ``running``), or given a record because the job had not run: that
    record, to be taken over; None otherwise."""
    if request.sweep_dir is None:
        return None
    record = read_record(run_dir / RESULT_FILE)
    never_ran = record is not None and record.error is not None and record.error.type == DID_NOT_RUN
    if record is None or (record.status is not Status.RUNNING and not never_ran):
        return None
    same = record.header.sources.overrides == [redact_override(o) for o in request.sources.overrides]
    return record if same else None


def _claimed(run_dir: Path, request: Launch) -> RunRecord | None:
    """The run dir's record of the run before, on a resume (checked to keep its configuration); a dir that
    holds another run's record, or a sweep's, is refused."""
    path = run_dir / RESULT_FILE
    if (run_dir / SWEEP_FILE).exists():
        raise UsageError(request.key, f"{run_dir} is a sweep's dir, which holds its jobs' runs and its summaries",
                         "leave hydra.run.dir unset for a new dir, or give one of its jobs' dirs")
    if not request.resume:
        if path.exists():
            raise UsageError(request.key, f"{run_dir} already holds another run's record",
                             "leave hydra.run.dir unset for a new dir, or continue that run with `rubric-runner resume DIR`")
        return None
    previous = read_record(path)
    recorded = recorded_sources(run_dir)
    if recorded is None:
        return previous
    now_composed = request.composed if request.composed is not None else compose(request.sources)
    # a DictConfig's container is a dict (to_container is typed for any node)
    before, after = (cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
                     for cfg in (compose(recorded), now_composed))
    keys = changed(before, after)
    if keys:
        raise UsageError(request.key, f"a resume keeps the configuration the run had; these overrides change it: "
                         f"{', '.join(keys)}", "start a new run for another configuration, or grade the run again "
                         "with `rubric-runner regrade RUN_DIR grader=...`")
    return previous


def save_config(run_dir: Path, cfg: DictConfig, sources: ConfigSources, key: str) -> None:
    """The composed config and the overrides in ``.hydra/``, secrets out (so `resume` and `regrade` can compose it again)."""
    saved = run_dir / ".hydra"
    secrets = config_secrets(OmegaConf.to_container(cfg, resolve=False), sources.overrides)
    try:
        saved.mkdir(exist_ok=True)
        (saved / "config.yaml").write_text(redact(OmegaConf.to_yaml(cfg), secrets), encoding="utf-8")
        (saved / "overrides.yaml").write_text(yaml.safe_dump([redact_override(o) for o in sources.overrides]), encoding="utf-8")
    except OSError as exc:
        raise unwritable(exc, key, "use a run dir you may write to") from None


def here() -> Place:
    """The host and process this run runs in, and the cluster's ids of its job."""
    env = os.environ
    return Place(host=socket.gethostname(), pid=os.getpid(), slurm_job_id=env.get("SLURM_JOB_ID"),
                 slurm_array_job_id=env.get("SLURM_ARRAY_JOB_ID"), slurm_array_task_id=env.get("SLURM_ARRAY_TASK_ID"),
                 ray_node_id=_ray_node_id())


def _ray_node_id() -> str | None:
    """The Ray node this process runs on, when it is a Ray worker (or a driver joined to a cluster)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:  # a Ray too old or too new to say: the record goes without it
        return None


def _header(request: Launch, previous: RunRecord | None) -> RunHeader:
    """What the run is: a resumed run's header goes on, with the overrides it was resumed with (a secret's
    value redacted: a config with one is refused anyway)."""
    sources = request.sources.model_copy(update={"overrides": [redact_override(o) for o in request.sources.overrides]})
    if previous is not None and previous.schema_version >= 2:
        return previous.header.model_copy(deep=True, update={"sources": sources})
    follow_up, graded = request.follow_up, request.regrading
    turn = follow_up.number if follow_up else turn_number(graded.source) if graded else 1
    return RunHeader(kind=request.kind, sources=sources, turn=turn if turn > 1 else None,
                     continued_from=str(follow_up.previous) if follow_up else None,
                     regraded_from=str(graded.source) if graded else None,
                     regraded_with=list(graded.overrides) if graded else None)


def _record(run_dir: Path, request: Launch, previous: RunRecord | None) -> RunRecord:
    """The new record of the run in ``run_dir`` (on a resume, the run's record goes on)."""
    return RunRecord(header=_header(request, previous), run_dir=str(run_dir), started_at=now(), place=here(),
                     resumed=previous.resumed + 1 if previous is not None else 0)
