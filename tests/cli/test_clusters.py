"""Sweeps on real clusters on this machine, where they fail as clusters do: a single-node SLURM
cluster (Debian's slurm-wlm and munge, as root, no accounting) and a two-node Ray cluster.

Each cluster is started by its fixture in a directory of its own and stopped afterwards, also when
a test fails; a test is skipped, saying why, where the machine cannot run the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import (
    SCRIPTED_EVIDENCE,
    cli_process,
    free_port,
    only_task,
    run_cli,
    run_json,
    verdict,
    write_script,
)
from support.sweeps import check_workspace_sweep, read_rows, user_task_set, workspace_sweep

from rubric_runner.environment import JOB_ENV

SLURM_BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")
SLURM_CONF = """\
ClusterName=rr
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=localhost CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
"""A one-node cluster without accounting (``sacct`` refuses): submitit then learns that a job ended
only from the sweep's own queue watch."""
A, B = "Has a title", "Cites a source"
SLURM_SWEEP = ("hydra/launcher=slurm_example", "hydra.launcher.partition=debug", "hydra.launcher.cpus_per_task=1",
               "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=5", "hydra.launcher.array_parallelism=1")


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each (last started first), then SIGKILL what is left after 20 s."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


ACCOUNTING_BINARIES = ("mariadb-install-db", "mariadbd", "mariadb", "slurmdbd", "sacctmgr")
SLURMDBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
DbdHost=localhost
DbdPort={dbd_port}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=slurm
StoragePass=slurm
PidFile={root}/slurmdbd.pid
LogFile={root}/slurmdbd.log
"""
"""slurmdbd on a MariaDB of its own (``accounting=True``): ``sacct`` then answers."""


def _skip_without(binaries: tuple[str, ...], install: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("a SLURM cluster needs root (slurmd runs jobs as their user)")
    missing = [name for name in binaries if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not found: apt-get install -y {install}")
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install 'rubric_runner[submitit]'")


def _accounting(root: Path, conf: str, procs: list[subprocess.Popen], log, env: dict[str, str]) -> str:
    """Start MariaDB and slurmdbd in ``root``, register the cluster; returns ``conf`` pointed at them."""
    db_port, dbd_port = free_port(), free_port()
    subprocess.run(["mariadb-install-db", f"--datadir={root / 'db'}", "--user=root",
                    "--auth-root-authentication-method=normal"], check=True, capture_output=True)
    procs.append(subprocess.Popen(
        ["mariadbd", f"--datadir={root / 'db'}", f"--socket={root / 'db.sock'}", f"--port={db_port}",
         "--bind-address=127.0.0.1", "--user=root", f"--pid-file={root / 'db.pid'}", f"--log-error={root / 'db.err'}"],
        stdout=log, stderr=subprocess.STDOUT))
    _until(lambda: (root / "db.sock").exists(), 60, lambda: (root / "db.err").read_text())
    subprocess.run(["mariadb", "-S", str(root / "db.sock"), "-u", "root", "-e",
                    "CREATE USER slurm@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO slurm@'127.0.0.1';"],
                   check=True, capture_output=True)
    (root / "slurmdbd.conf").write_text(SLURMDBD_CONF.format(root=root, db_port=db_port, dbd_port=dbd_port))
    (root / "slurmdbd.conf").chmod(0o600)
    procs.append(subprocess.Popen(["slurmdbd", "-D"], env=env, stdout=log, stderr=subprocess.STDOUT))
    conf = conf.replace("AccountingStorageType=accounting_storage/none", "\n".join((
        "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
        f"AccountingStoragePort={dbd_port}", f"AccountingStoragePass={root / 'munge.sock'}")))
    (root / "slurm.conf").write_text(conf)

    def registered() -> bool:
        return subprocess.run(["sacctmgr", "-i", "add", "cluster", "rr"], env=env, capture_output=True,
                              timeout=30).returncode == 0

    _until(registered, 60, lambda: (root / "slurmdbd.log").read_text() if (root / "slurmdbd.log").exists() else "")
    return conf


@contextlib.contextmanager
def _slurm_cluster(accounting: bool) -> Iterator[dict[str, str]]:
    """munged, (MariaDB and slurmdbd,) slurmctld and ``slurmd -N localhost`` in the foreground, from a
    directory of their own; yields the environment that points SLURM's commands at them."""
    root = Path(tempfile.mkdtemp(prefix="slurm"))
    for sub in ("state", "spool"):
        (root / sub).mkdir()
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(root=root, ctld_port=free_port(), d_port=free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen] = []
    log = open(root / "daemons.log", "w")
    try:
        subprocess.run(["mungekey", "-c", "-f", "-k", str(root / "munge.key")], check=True, capture_output=True)
        (root / "munge.key").chmod(0o600)
        procs.append(subprocess.Popen(
            ["munged", "-F", "--force", f"--key-file={root / 'munge.key'}", f"--socket={root / 'munge.sock'}",
             f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}", f"--seed-file={root / 'munge.seed'}"],
            stdout=log, stderr=subprocess.STDOUT))
        _until(lambda: (root / "munge.sock").exists(), 20, "munged did not start")
        if accounting:
            _accounting(root, conf.read_text(), procs, log, env)
        procs.append(subprocess.Popen(["slurmctld", "-D", "-f", str(conf)], env=env, stdout=log, stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(["slurmd", "-D", "-N", "localhost", "-f", str(conf)], env=env, stdout=log,
                                      stderr=subprocess.STDOUT))

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout
            return out.strip() == "idle"

        _until(idle, 60, lambda: (root / "daemons.log").read_text())
        yield {"SLURM_CONF": str(conf)}
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True)
        _stop(procs)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm() -> Iterator[dict[str, str]]:
    """A one-node SLURM cluster without accounting."""
    _skip_without(SLURM_BINARIES, "slurm-wlm munge")
    with _slurm_cluster(accounting=False) as env:
        yield env


@pytest.fixture
def slurm_with_accounting() -> Iterator[dict[str, str]]:
    """A one-node SLURM cluster whose ``sacct`` answers (slurmdbd on a MariaDB of its own)."""
    _skip_without(SLURM_BINARIES + ACCOUNTING_BINARIES, "slurm-wlm munge slurmdbd mariadb-server")
    with _slurm_cluster(accounting=True) as env:
        yield env


def _until(ready, seconds: float, why) -> None:
    """Wait for ``ready()``, failing with ``why`` (or its result) after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, why() if callable(why) else why
        time.sleep(0.3)


def _sweep(tmp: Path, env: dict[str, str], *args: str) -> contextlib.AbstractContextManager[subprocess.Popen]:
    """``rubric_runner -m ARGS`` in the background with ``env`` added (``cli_process``: killed on the way out)."""
    return cli_process("-m", *args, cwd=tmp, env=env)


def _scripts(tmp: Path, latency: float) -> tuple[Path, Path]:
    """A worker that answers after ``latency`` seconds (satisfied), and one that never satisfies."""
    slow = write_script(tmp / "slow.yaml", [{"content": "final", "latency": latency}], [verdict("satisfied", (A, True))])
    stuck = write_script(tmp / "stuck.yaml", [{"content": "draft 1"}, {"content": "draft 2"}],
                         [verdict("needs_revision", (A, False))] * 2)
    return slow, stuck


def _queue(env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T"], env={**os.environ, **env}, capture_output=True,
                         text=True).stdout
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def _cancel_a_pending_job(slurm: dict[str, str], tmp_path: Path, ends: tuple[str, ...] = ("left the queue",)) -> None:
    """Two jobs, one at a time: job 1 is cancelled while pending. The sweep ends (bounded), with a row for
    each job saying how it ended (one of ``ends``), and exits 3."""
    slow, stuck = _scripts(tmp_path, latency=6)
    sweep_dir = tmp_path / "sweep"
    with _sweep(tmp_path, slurm, *SLURM_SWEEP, "worker=scripted", "grader=scripted", "run.console=false",
                SCRIPTED_EVIDENCE, f"worker.script={slow},{stuck}", "grader.script=${worker.script}",
                "grader.max_iterations=2", f"hydra.sweep.dir={sweep_dir}") as proc:
        _until(lambda: any(job.endswith("_1") and state == "PENDING" for job, state in _queue(slurm).items()), 60,
               lambda: f"no pending task: {_queue(slurm)}")
        pending = next(job for job, state in _queue(slurm).items() if job.endswith("_1"))
        subprocess.run(["scancel", pending], env={**os.environ, **slurm}, check=True)
        out, err = proc.communicate(timeout=150)
    assert proc.returncode == 3, err
    rows = read_rows(sweep_dir)
    assert [(row["job"], row["status"]) for row in rows] == [("0", "satisfied"), ("1", "interrupted")]
    assert rows[1]["error"].startswith(tuple(f"DidNotRun: the job did not run: SLURM job {pending} {end}" for end in ends)), rows[1]
    assert rows[0]["where"].split()[-2:] == ["slurm", pending.replace("_1", "_0")]
    assert rows[0]["partial"] == "partial: 1 of 1 runs finished, 1 job not started"
    assert run_json(sweep_dir / "1")["status"] == "interrupted"
    assert "Traceback" not in err


def test_a_cancelled_pending_slurm_job_is_a_row_and_the_sweep_exits_3(slurm, tmp_path):
    _cancel_a_pending_job(slurm, tmp_path)


def test_a_cancelled_pending_slurm_job_is_a_row_with_accounting_too(slurm_with_accounting, tmp_path):
    """With accounting, SLURM may keep no state of an array task cancelled while pending (the same end) or
    record it as cancelled (docs/clusters.md names both)."""
    _cancel_a_pending_job(slurm_with_accounting, tmp_path, ("left the queue", "CANCELLED by"))


def test_a_rejected_sbatch_is_one_line_naming_slurms_message(slurm, tmp_path):
    with _sweep(tmp_path, slurm, *SLURM_SWEEP, "hydra.launcher.partition=nosuch", "worker=scripted", "grader=scripted",
                "run.console=false", f"hydra.sweep.dir={tmp_path / 'sweep'}") as proc:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    *sbatch_said, last = err.strip().splitlines()  # submitit echoes sbatch's own stderr first
    assert all(line.startswith("sbatch: error: ") for line in sbatch_said), err
    assert last.startswith("error: ") and "Invalid partition name specified" in last and "hydra.launcher.partition" in last
    assert "Traceback" not in err and "relative" not in err


def test_a_failing_setup_line_fails_the_job_and_says_so(slurm, tmp_path):
    """The preset's ``set -e``: a setup line that fails ends the job before it starts, and its row says so."""
    sweep_dir = tmp_path / "sweep"
    with _sweep(tmp_path, slurm, *SLURM_SWEEP, 'hydra.launcher.setup=["set -e","false"]', "worker=scripted",
                "grader=scripted", "run.console=false", f"hydra.sweep.dir={sweep_dir}") as proc:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    (row,) = read_rows(sweep_dir)
    assert row["status"] == "interrupted" and row["error"].startswith("DidNotRun: the job did not run: SLURM job "), row
    assert "Traceback" not in err


def test_a_slurm_job_signalled_before_its_limit_records_itself_interrupted(slurm, tmp_path):
    """SIGUSR2, as submitit asks SLURM to send before the time limit: the run stops at a checkpoint,
    records itself interrupted (resumable), and the sweep exits 3."""
    slow = write_script(tmp_path / "slow.yaml", [{"content": "draft", "latency": 4}, {"content": "final", "latency": 4}],
                        [verdict("needs_revision", (A, False)), verdict("satisfied", (A, True))])
    sweep_dir = tmp_path / "sweep"
    with _sweep(tmp_path, slurm, *SLURM_SWEEP, "worker=scripted", "grader=scripted", "run.console=false",
                SCRIPTED_EVIDENCE, f"worker.script={slow}", "grader.script=${worker.script}",
                f"hydra.sweep.dir={sweep_dir}") as proc:
        record = sweep_dir / "0" / "result.json"
        _until(lambda: record.is_file() and json.loads(record.read_text() or "{}").get("status") == "running", 90,
               "the job never started")
        job = next(iter(_queue(slurm)))
        subprocess.run(["scancel", "--signal=USR2", job], env={**os.environ, **slurm}, check=True)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    data = json.loads(record.read_text())
    assert (data["status"], data["error"]["message"]) == ("interrupted", "SIGUSR2: stopped at a checkpoint"), data
    assert data["place"]["slurm_job_id"] == job  # one job: submitted alone, not as an array
    assert read_rows(sweep_dir)[0]["where"].endswith(f"slurm {job}")


def test_a_workspace_task_set_sweeps_on_slurm(slurm, workspace_run, tmp_path):
    """Each job, a task of one array, ends its tasks as a local run does, with the same kept diffs, hidden checks
    and seeds: from the package's task set and from a user's copy named relative to the shell's dir."""
    user_task_set(tmp_path)
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(*workspace_sweep(*SLURM_SWEEP), f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, env=slurm, timeout=240)
    assert proc.returncode == 0, proc.stderr
    check_workspace_sweep(sweep_dir, workspace_run)
    places = [run_json(sweep_dir / job)["place"] for job in ("0", "1")]
    assert [place["slurm_array_task_id"] for place in places] == ["0", "1"]


RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_health_check_period_ms": "1000",
           "RAY_health_check_failure_threshold": "3", "RAY_worker_niceness": "0"}
"""Token authentication, a node's death noticed in seconds, and workers at the test run's priority (Ray's
default niceness of 15 starves them beside the rest of a parallel test run)."""


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _ray_node(args: list[str], root: Path, name: str, env: dict[str, str]) -> subprocess.Popen:
    """``ray start ... --block`` with its log in ``root/name.log``, once it says it is up."""
    log = root / f"{name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--block", "--num-cpus=1",
                                 "--node-ip-address=127.0.0.1", *args], cwd=root / "cwd", env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    _until(lambda: "will now block" in log.read_text() or proc.poll() is not None, 120, lambda: log.read_text())
    assert proc.poll() is None, log.read_text()
    return proc


@pytest.fixture
def two_ray_nodes():
    """A head and a worker node of one CPU each, a token of their own; yields the address, the worker
    node's process, and the environment a driver needs. Both stopped afterwards."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="pip install 'rubric_runner[ray]'")
    root = Path(tempfile.mkdtemp(prefix="ray"))
    (root / "cwd").mkdir()
    token = root / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    cluster_env = {**RAY_ENV, "RAY_AUTH_TOKEN_PATH": str(token)}
    env = {name: value for name, value in os.environ.items() if name not in JOB_ENV and not name.startswith("RAY_AUTH")}
    address = f"127.0.0.1:{free_port()}"
    nodes: list[subprocess.Popen] = []
    try:
        nodes.append(_ray_node(["--head", "--include-dashboard=false", f"--port={address.split(':')[1]}",
                                f"--temp-dir={root / 'tmp'}"], root, "head", {**env, **cluster_env}))
        nodes.append(_ray_node([f"--address={address}"], root, "worker", {**env, **cluster_env}))
        yield address, nodes[1], cluster_env
    finally:
        for node in reversed(nodes):
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGTERM)
        for node in nodes:
            try:
                node.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)
                node.wait()
        shutil.rmtree(root, ignore_errors=True)


def _kill_the_worker_node_mid_sweep(nodes, tmp: Path, *extra: str):
    """Two jobs, one on each node; the worker node is killed (SIGKILL, every process of it) while both run.
    Returns the sweep's (exit code, stdout + stderr), its dir, the killed job and the dead node's id."""
    address, worker_node, cluster_env = nodes
    slow = write_script(tmp / "slow.yaml", [{"content": "final", "latency": 8}], [verdict("satisfied", (A, True))])
    sweep_dir = tmp / "sweep"
    with _sweep(tmp, cluster_env, "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}",
                "worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE,
                f"worker.script={slow}", "grader.script=${worker.script}", "worker.model=scripted:a,scripted:b",
                f"hydra.sweep.dir={sweep_dir}", *extra) as proc:

        def running() -> dict[str, dict]:
            found = {}
            for job in ("0", "1"):
                path = sweep_dir / job / "result.json"
                data = json.loads(path.read_text() or "{}") if path.is_file() else {}
                if data.get("status") == "running":
                    found[job] = data
            return found

        _until(lambda: len(running()) == 2, 120, lambda: f"both jobs never ran at once: {proc.poll()}")
        on_worker = set(_descendants(worker_node.pid))
        (killed,) = [job for job, data in running().items() if data["place"]["pid"] in on_worker]
        dead_node = running()[killed]["place"]["ray_node_id"]
        for pid in [worker_node.pid, *on_worker]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    return proc.returncode, out + err, sweep_dir, killed, dead_node


def test_a_ray_job_whose_node_died_is_retried_and_resumed(two_ray_nodes, tmp_path):
    """Ray retries the killed job on the head; the retry takes over the dead attempt's dir, and both jobs
    end satisfied."""
    code, said, sweep_dir, killed, dead_node = _kill_the_worker_node_mid_sweep(two_ray_nodes, tmp_path)
    assert code == 0, said
    rows = read_rows(sweep_dir)
    assert [row["status"] for row in rows] == ["satisfied", "satisfied"]
    assert "still says running" not in said
    record = run_json(sweep_dir / killed)
    assert [place["ray_node_id"] for place in record["taken_over"]] == [dead_node]
    assert record["place"]["ray_node_id"] not in (None, dead_node)
    assert rows[int(killed)]["attempts"] == 2 and rows[1 - int(killed)]["attempts"] == 1


def test_a_ray_job_lost_without_retries_is_still_a_row(two_ray_nodes, tmp_path):
    """With ``max_retries=0`` Ray gives the killed job up and the launcher stops at it: the other job still
    ends as it would (the sweep waits for it), each job has its row, and the sweep exits 3."""
    code, said, sweep_dir, killed, dead_node = _kill_the_worker_node_mid_sweep(
        two_ray_nodes, tmp_path, "hydra.launcher.ray.remote.max_retries=0")
    assert code == 3, said
    rows = read_rows(sweep_dir)
    assert rows[1 - int(killed)]["status"] == "satisfied"
    assert rows[int(killed)]["status"] == "error" and "process died" in rows[int(killed)]["error"]
    assert rows[int(killed)]["where"].endswith(f"ray {dead_node[:12]}")
    assert "note: the launcher ended with " in said and "Traceback" not in said


def test_a_workspace_task_set_sweeps_on_two_ray_nodes(two_ray_nodes, workspace_run, tmp_path):
    """A job on each node, in the node's working dir rather than the shell's: each finds its tasks' files (the
    package's, and a user's named relative to the shell's dir) and ends them as a local run does."""
    address, _, cluster_env = two_ray_nodes
    user_task_set(tmp_path)
    sweep_dir = tmp_path / "sweep"
    proc = run_cli(*workspace_sweep("hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}"),
                   f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, env=cluster_env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_workspace_sweep(sweep_dir, workspace_run)
    nodes = {run_json(sweep_dir / job)["place"]["ray_node_id"] for job in ("0", "1")}
    assert len(nodes) == 2, nodes


def test_a_slurm_job_at_its_time_limit_records_itself_interrupted(slurm, tmp_path):
    """A real limit: ``timeout_min=2`` and a worker that needs longer. SLURM's warning (SIGUSR2, 30 s before)
    or its SIGTERM at the limit stops the run at a checkpoint; the record says interrupted, the sweep exits 3.
    (With 1 minute, a job whose first imports were slow got its warning before its first grading pass.)"""
    slow = write_script(tmp_path / "slow.yaml", [{"content": "draft", "latency": 3}] * 40,
                        [verdict("needs_revision", (A, False))] * 40)
    sweep_dir = tmp_path / "sweep"
    with _sweep(tmp_path, slurm, *SLURM_SWEEP, "hydra.launcher.timeout_min=2", "hydra.launcher.signal_delay_s=30",
                "worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE, f"worker.script={slow}",
                "grader.script=${worker.script}", "grader.max_iterations=40", f"hydra.sweep.dir={sweep_dir}") as proc:
        out, err = proc.communicate(timeout=240)
    assert proc.returncode == 3, err
    data = run_json(sweep_dir / "0")
    assert data["status"] == "interrupted", data
    assert data["error"]["message"].split(":")[0] in ("SIGUSR2", "SIGTERM", "SIGUSR2 twice", "SIGTERM twice"), data
    assert 0 < data["task"]["iterations"] < 40


def test_a_new_attempt_takes_over_a_dead_attempts_dir_and_resumes_it(tmp_path):
    """No cluster needed: the first attempt of a sweep's job is SIGKILLed after its first grading pass; a
    second attempt of the same job (as Ray's retry makes it) resumes the dir and records the takeover;
    an attempt of another job is refused the dir."""
    from rubric_runner.errors import UsageError
    from rubric_runner.loop.launch import launch
    from rubric_runner.loop.request import Launch
    from rubric_runner.records import ConfigSources

    script = write_script(tmp_path / "revise.yaml",
                          [{"content": "draft"}, {"content": "final", "latency": 8}, {"content": "final"}],
                          [verdict("needs_revision", (A, False)), verdict("satisfied", (A, True))])
    run_dir = tmp_path / "sweep" / "0"
    overrides = ["worker=scripted", "grader=scripted", f"worker.script={script}", f"grader.script={script}",
                 "run.console=false", SCRIPTED_EVIDENCE]
    first = subprocess.Popen([sys.executable, "-m", "rubric_runner", *overrides, f"hydra.run.dir={run_dir}"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = run_dir / "result.json"
    try:
        _until(lambda: (run_dir / "events.jsonl").is_file() and "needs_revision" in (run_dir / "events.jsonl").read_text(),
               60, "the first grading pass never ended")
    finally:
        first.kill()
        first.wait()
    assert json.loads(record.read_text())["status"] == "running"
    sources = ConfigSources(overrides=[*overrides, f"hydra.run.dir={run_dir}"])
    with pytest.raises(UsageError, match="already holds another run's record"):
        launch(Launch(ConfigSources(overrides=[*overrides, "run.repeats=1"]), run_dir=run_dir, sweep_dir=run_dir.parent))
    done = launch(Launch(sources, run_dir=run_dir, sweep_dir=run_dir.parent))
    assert done.status == "satisfied", done.error
    assert [place.pid for place in done.taken_over] == [first.pid]
    assert only_task(done).iterations == 2 and done.resumed == 1


def test_a_submitit_job_signalled_records_itself_interrupted_without_slurm(tmp_path):
    """The same time-limit warning without a cluster: submitit's local executor runs the job in a process
    of its own; SIGUSR2 to it stops the run at a checkpoint, recorded interrupted; the sweep exits 3."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install 'rubric_runner[submitit]'")
    slow = write_script(tmp_path / "slow.yaml", [{"content": "draft", "latency": 3}, {"content": "final", "latency": 3}],
                        [verdict("needs_revision", (A, False)), verdict("satisfied", (A, True))])
    sweep_dir = tmp_path / "sweep"
    with _sweep(tmp_path, {}, "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5", "worker=scripted",
                "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE, f"worker.script={slow}",
                "grader.script=${worker.script}", f"hydra.sweep.dir={sweep_dir}") as proc:
        record = sweep_dir / "0" / "result.json"
        _until(lambda: record.is_file() and json.loads(record.read_text() or "{}").get("status") == "running", 90,
               "the job never started")
        os.kill(json.loads(record.read_text())["place"]["pid"], signal.SIGUSR2)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    data = json.loads(record.read_text())
    assert (data["status"], data["error"]["message"]) == ("interrupted", "SIGUSR2: stopped at a checkpoint"), data
    assert [row["status"] for row in read_rows(sweep_dir)] == ["interrupted"]
    assert "Traceback" not in err


def test_a_sweep_where_sbatch_is_missing_is_one_line(tmp_path):
    """No SLURM on this machine (PATH without it): one line naming what is missing and the way out, exit 2."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install 'rubric_runner[submitit]'")
    with _sweep(tmp_path, {"PATH": str(Path(sys.executable).parent)}, *SLURM_SWEEP, "worker=scripted",
                "grader=scripted", "run.console=false", f"hydra.sweep.dir={tmp_path / 'sweep'}") as proc:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert err.strip().splitlines() == ['error: RuntimeError: Could not detect "srun", are you indeed on a slurm cluster? '
                                        "(run the sweep where SLURM's commands are, or use hydra/launcher=submitit_local)"]


def test_an_engine_failure_is_named_by_its_own_words():
    from rubric_runner.cli.engine_errors import engine_failure

    quoted = RuntimeError("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
                          '  File "x.py", line 1\nray.exceptions.AuthenticationError: token is missing or incorrect')
    assert engine_failure(quoted).startswith("ray.exceptions.AuthenticationError: token is missing or incorrect "
                                             "(start the cluster and this shell with RAY_AUTH_MODE=token")
    assert engine_failure(RuntimeError("job array 3 failed")) == \
        "RuntimeError: job array 3 failed (HYDRA_FULL_ERROR=1 shows the whole traceback)"
    assert engine_failure(ValueError("Job 1_1 with path /x.pkl\nhas not produced any output\nlog: ..."), fix=False) == \
        "ValueError: Job 1_1 with path /x.pkl has not produced any output"
    assert engine_failure(ValueError("Refused.\nmore"), fix=False) == "ValueError: Refused."
