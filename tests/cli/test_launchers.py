"""Sweeps through Hydra's cluster launchers: a real Ray cluster on this machine (joined by address)
and submitit's local executor leave the same job records and summary as the basic launcher, and no
key from the environment in any file of the sweep."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.helpers import SCRIPTED_EVIDENCE, cli_process, free_port, run_cli, run_json, write_script
from support.sweeps import SCRIPTED, STATUSES, read_rows, run_six_job_sweep
from support.wire import FAKE_KEYS, FakeServer, model_overrides, text

from rubric_runner.cli.sweep import Sweep, SweepSummary
from rubric_runner.environment import JOB_ENV

DETERMINISTIC = (
    "job", "overrides", "worker", "grader", "rubric", "status", "exit_code", "mean_passes_per_run",
    "worker_tokens", "grader_tokens", "error",
)
"""Summary fields that scripted models make the same on every launcher (not timings or dirs)."""
RUN_FIELDS = ("status", "exit_code", "error")
TASK_FIELDS = ("iterations", "final_answer", "usage")
HEADER_FIELDS = ("worker", "grader", "rubric", "sources")
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray's single-machine mode: every address is 127.0.0.1
    "RAY_AUTH_MODE": "token",
    "RAY_worker_niceness": "0",  # Ray's default of 15 starves its workers beside the rest of a parallel test run
}
"""The cluster's environment; ``ray_cluster`` adds ``RAY_AUTH_TOKEN_PATH``, a token of its own."""


def normalized(sweep_dir: Path, tmp: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The summary rows and each job's record, cut to what must not depend on the launcher."""
    def plain(value: Any) -> Any:
        return json.loads(json.dumps(value).replace(str(tmp), "TMP"))

    rows = [plain({key: row[key] for key in DETERMINISTIC}) for row in read_rows(sweep_dir)]
    records = []
    for row in rows:
        record = run_json(sweep_dir / row["job"])
        task = record["task"] or {}  # the crashed job never got to its task
        evaluations = [{key: e.get(key) for key in ("result", "explanation", "criteria", "iteration")}
                       for e in task.get("evaluations", [])]
        records.append(plain({**{key: record[key] for key in RUN_FIELDS}, **{key: task.get(key) for key in TASK_FIELDS},
                              **{key: record["header"][key] for key in HEADER_FIELDS}, "evaluations": evaluations}))
    return rows, records


@pytest.fixture(scope="module")
def basic(six_job_sweep):
    proc, sweep_dir, tmp = six_job_sweep
    assert proc.returncode == 3, proc.stderr
    rows, records = normalized(sweep_dir, tmp)
    assert [row["status"] for row in rows] == STATUSES
    return rows, records


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under ``root`` (pickles and logs included) whose bytes contain ``secret``."""
    return [path for path in root.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]


@pytest.fixture(scope="module")
def ray_cluster():
    """``ray start --head`` with 2 CPUs, no dashboard and no provider keys in its environment, from a
    directory of its own, with a token of its own in that directory (never the user's ~/.ray);
    yields its address, that directory and the environment a driver needs to join it.
    Stopped (SIGTERM) afterwards."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="pip install 'rubric_runner[ray]'")
    root = Path(tempfile.mkdtemp(prefix="ray"))  # short: Ray's socket paths live below it
    (root / "cwd").mkdir()
    token = root / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    cluster_env = {**RAY_ENV, "RAY_AUTH_TOKEN_PATH": str(token)}
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name not in JOB_ENV and not name.startswith("RAY_AUTH")}
    log = open(root / "head.log", "w")
    head = subprocess.Popen(
        [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", "--num-cpus=2",
         "--include-dashboard=false", "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={root / 'tmp'}"],
        cwd=root / "cwd", env={**env, **cluster_env}, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while "will now block" not in (root / "head.log").read_text():
            assert head.poll() is None and time.monotonic() < deadline, (root / "head.log").read_text()
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", root / "cwd", cluster_env
    finally:
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def test_ray_sweep_matches_the_basic_launcher(ray_cluster, basic, tmp_path, monkeypatch):
    address, head_cwd, cluster_env = ray_cluster
    for name, value in {**cluster_env, **FAKE_KEYS}.items():
        monkeypatch.setenv(name, value)
    proc, sweep_dir = run_six_job_sweep(tmp_path, "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}")
    assert proc.returncode == 3, proc.stderr
    assert "Connected to Ray cluster" in proc.stderr
    assert normalized(sweep_dir, tmp_path) == basic
    assert (sweep_dir / "report.html").is_file()
    assert "env_vars: ${job_env:}" in (sweep_dir / "multirun.yaml").read_text()
    for value in FAKE_KEYS.values():
        assert files_holding(sweep_dir, value) == []
    assert list(head_cwd.iterdir()) == []


def test_ray_workers_get_keys_from_the_submitting_shell(ray_cluster, tmp_path, monkeypatch):
    """The head has no key; ``${job_env:}`` sends the submitting shell's through Ray's runtime_env.
    The default sweep dir is absolute on the submitting side, though the workers run elsewhere."""
    address, head_cwd, cluster_env = ray_cluster
    for name, value in {**cluster_env, **FAKE_KEYS}.items():
        monkeypatch.setenv(name, value)
    grader = write_script(tmp_path / "grader.yaml", [], [{"tool_calls": [{"name": "GraderResponse", "args": {
        "result": "satisfied", "explanation": "ok", "criteria": [{"name": "c", "passed": True}]}}]}])
    with FakeServer("anthropic", [text("a haiku")]) as server:
        proc = run_cli(
            "-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}",
            *model_overrides("worker", server, max_retries=0), "grader=scripted", f"grader.script={grader}",
            "run.console=false", SCRIPTED_EVIDENCE, cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert [request.key for request in server.requests] == [FAKE_KEYS["ANTHROPIC_API_KEY"]]
    (sweep_dir,) = (tmp_path / "outputs" / "multirun").glob("*/*")
    assert [row["status"] for row in read_rows(sweep_dir)] == ["satisfied"]
    assert files_holding(tmp_path, FAKE_KEYS["ANTHROPIC_API_KEY"]) == []
    assert list(head_cwd.iterdir()) == []


def test_ctrl_c_of_a_ray_sweep_records_its_running_jobs_interrupted_and_the_summary_partial(ray_cluster, tmp_path, monkeypatch):
    """Ctrl-C reaches the driver alone (Ray's workers run under the cluster's processes): the jobs read the sweep
    dir's stop marker at their next checkpoint, as the basic launcher's job would stop."""
    address, _, cluster_env = ray_cluster
    for name, value in cluster_env.items():
        monkeypatch.setenv(name, value)
    slow = write_script(tmp_path / "slow.yaml", [{"content": "slow", "latency": 8}], [])
    sweep_dir = tmp_path / "sweep"
    with cli_process("-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}", *SCRIPTED,
                     f"worker.script={slow}", "grader.script=${worker.script}", "tags=[a],[b]",
                     f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path) as proc:
        deadline = time.monotonic() + 120
        while not all('"model_call_start"' in _text(sweep_dir / job / "events.jsonl") for job in ("0", "1")):
            assert time.monotonic() < deadline and proc.poll() is None, "the jobs never began their worker call"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    statuses = [run_json(sweep_dir / job)["status"] for job in ("0", "1")]
    assert statuses == ["interrupted", "interrupted"]
    partial = "partial: 0 of 2 runs finished"
    assert f"sweep: {partial}; 2 runs: 2 interrupted" in stdout, stdout
    assert [(r["status"], r["partial"]) for r in read_rows(sweep_dir)] == [("interrupted", partial)] * 2
    assert not (sweep_dir / ".stop").exists()


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_submitit_local_sweep_matches_the_basic_launcher(basic, tmp_path, monkeypatch):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install 'rubric_runner[submitit]'")
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    proc, sweep_dir = run_six_job_sweep(tmp_path, "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5")
    assert proc.returncode == 3, proc.stderr
    assert normalized(sweep_dir, tmp_path) == basic
    pickles = list((sweep_dir / ".submitit").rglob("*.pkl"))
    assert pickles, "submitit left no pickled jobs to check"
    for value in FAKE_KEYS.values():
        assert files_holding(sweep_dir, value) == []


def test_slurm_example_composes_for_submitit(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install 'rubric_runner[submitit]'")
    proc = run_cli(*SCRIPTED, "hydra/launcher=slurm_example", "hydra.launcher.partition=gpu", "--cfg", "hydra", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    launcher = yaml.safe_load(proc.stdout)["hydra"]["launcher"]
    assert launcher["_target_"] == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert (launcher["partition"], launcher["timeout_min"], launcher["array_parallelism"]) == ("gpu", 120, 32)
    assert launcher["setup"] == ["set -e"] and "gpus_per_node" in launcher
    assert launcher["signal_delay_s"] == 120


def test_a_sweep_whose_jobs_wrote_elsewhere_says_so(tmp_path, monkeypatch, capsys):
    """What a relative hydra.sweep.dir does on a Ray cluster: the jobs' dirs are not where the sweep looks."""
    summary = SweepSummary()
    summary.sweep = Sweep(dir=tmp_path, fail_under=None, prices=None, started_at="", relative=True)
    summary.on_multirun_end(config=None)
    assert summary.conclude() == 2
    assert f"error: the jobs left no records under {tmp_path}: a relative hydra.sweep.dir" in capsys.readouterr().err


def test_an_absolute_sweep_dir_gets_no_hint_about_relative_paths(tmp_path, capsys):
    """Jobs that left nothing under an absolute sweep dir: a row each saying it did not run, exit 3."""
    summary = SweepSummary()
    summary.sweep = Sweep(dir=tmp_path, fail_under=None, prices=None, started_at="", jobs=2,
                          planned=[["worker.script=a"], ["worker.script=b"]])
    assert summary.conclude() == 3
    err = capsys.readouterr().err
    assert "relative" not in err
    rows = read_rows(tmp_path)
    assert [(row["job"], row["status"], row["exit_code"]) for row in rows] == [("0", "interrupted", 130), ("1", "interrupted", 130)]
    assert all(row["error"].startswith("DidNotRun: the job did not run") for row in rows)
    assert rows[0]["partial"] == "partial: 0 of 0 runs finished, 2 jobs not started"


def test_a_ray_driver_without_the_clusters_token_gets_one_line(ray_cluster, tmp_path, monkeypatch):
    """Ray's own words (its AuthenticationError) and the fix, exit 2, no traceback, nothing launched."""
    address, head_cwd, cluster_env = ray_cluster
    wrong = tmp_path / "wrong_token"
    wrong.write_text(secrets.token_hex(32))
    wrong.chmod(0o600)
    for name, value in {**cluster_env, "RAY_AUTH_TOKEN_PATH": str(wrong)}.items():
        monkeypatch.setenv(name, value)
    proc = run_cli("-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}", *SCRIPTED,
                   f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path, timeout=180)
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ray.exceptions.AuthenticationError: ") and "RAY_AUTH_MODE=token" in last, proc.stderr
    assert "Traceback" not in proc.stderr and "relative" not in proc.stderr
    assert not (tmp_path / "sweep" / "summary.jsonl").exists()


def test_a_ray_address_where_nothing_answers_is_one_line(tmp_path):
    """Ray itself would retry for minutes: the sweep checks the address first."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="pip install 'rubric_runner[ray]'")
    port = free_port()
    proc = run_cli("-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address=127.0.0.1:{port}", *SCRIPTED,
                   f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: hydra.launcher.ray.init.address: Ray: nothing answers at 127.0.0.1:{port}: Connection refused "
        "(start the cluster (`ray start --head`) or give its address (`ray status` on a node shows it))"]
