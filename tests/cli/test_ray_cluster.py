"""Sweeps on a real two-node Ray cluster on this machine, where they fail as clusters do: a node killed mid-sweep,
with and without retries, and a workspace task set whose jobs run in the nodes' own dirs.

The cluster is started by its fixture in a directory of its own and stopped afterwards, also when a test fails;
a test is skipped, saying why, where the machine cannot run it.
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
from pathlib import Path

import pytest
from support.helpers import SCRIPTED_EVIDENCE, cli_process, free_port, run_cli, run_json, until, verdict, write_script
from support.sweeps import check_workspace_sweep, read_rows, user_task_set, workspace_sweep

from rubric_runner.environment import JOB_ENV

A = "Has a title"


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
    until(lambda: "will now block" in log.read_text() or proc.poll() is not None, 120, lambda: log.read_text())
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
    with cli_process("-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}",
                "worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE,
                f"worker.script={slow}", "grader.script=${worker.script}", "worker.model=scripted:a,scripted:b",
                f"hydra.sweep.dir={sweep_dir}", *extra, cwd=tmp, env=cluster_env) as proc:

        def running() -> dict[str, dict]:
            found = {}
            for job in ("0", "1"):
                path = sweep_dir / job / "result.json"
                data = json.loads(path.read_text() or "{}") if path.is_file() else {}
                if data.get("status") == "running":
                    found[job] = data
            return found

        until(lambda: len(running()) == 2, 120, lambda: f"both jobs never ran at once: {proc.poll()}")
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
