"""run.checkpointer=postgres against a real PostgreSQL server started for these tests: a run, an
interrupt and resume, the password kept out of every file, and one-line config errors."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.helpers import (
    cli_process,
    compose_config,
    free_port,
    run_cli,
    run_json,
    scripted_overrides,
    verdict,
    write_script,
)
from test_interrupt import _script, _wait_for

from rubric_runner.config.validate import validate
from rubric_runner.environment import POSTGRES_URL_ENV
from rubric_runner.errors import UsageError

psycopg = pytest.importorskip("psycopg", reason="pip install 'rubric_runner[postgres]'")

SERVER_BINS = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server on 127.0.0.1 in a temp dir (as user postgres when run as root), password auth.

    Yields ``(url, password)``: the URL names the user and no password, as a user would set it.
    """
    if not SERVER_BINS:
        pytest.skip("PostgreSQL's server is not installed (scripts/setup installs it with apt as root)")
    bin_dir = SERVER_BINS[-1].parent
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="pg"))
    password = secrets.token_hex(12)
    (root / "pw").write_text(password)
    if as_user:
        shutil.chown(root, "postgres")
        shutil.chown(root / "pw", "postgres")
    data, port = root / "data", free_port()
    subprocess.run([*as_user, bin_dir / "initdb", "-D", data, "-U", "rubric", "--auth=scram-sha-256",
                    f"--pwfile={root / 'pw'}", "--no-sync"], check=True, capture_output=True)
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run([*as_user, bin_dir / "pg_ctl", "-D", data, "-o", options, "-l", root / "log", "-w", "start"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://rubric@127.0.0.1:{port}/postgres", password
    finally:
        subprocess.run([*as_user, bin_dir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_env(postgres, monkeypatch):
    """The database URL and its password in the environment, where rubric_runner reads them."""
    url, password = postgres
    monkeypatch.setenv(POSTGRES_URL_ENV, url)
    monkeypatch.setenv("PGPASSWORD", password)
    return url, password


def _checkpoints(url: str, password: str, thread_id: str) -> int:
    with psycopg.connect(url, password=password) as db:
        return db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)).fetchone()[0]


def _files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_a_run_checkpoints_to_postgres(tmp_path, pg_env):
    url, password = pg_env
    script = write_script(tmp_path / "s.yaml", [{"content": "draft"}, {"content": "final"}],
                          [verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])
    run_dir = tmp_path / "run"
    proc = run_cli(*scripted_overrides(script, "run.checkpointer=postgres"), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = run_json(run_dir)
    assert (record["status"], record["task"]["iterations"]) == ("satisfied", 2)
    assert not (run_dir / "checkpoints.sqlite").exists()
    assert _checkpoints(url, password, record["task"]["thread_id"]) == 1  # the finished thread keeps its latest
    assert _files_holding(run_dir, password) == []


def test_interrupt_then_resume_from_postgres(tmp_path, pg_env):
    url, password = pg_env
    run_dir = tmp_path / "run"
    script = _script(tmp_path / "script.yaml")
    args = ["worker=scripted", "grader=scripted", "rubric=code", f"worker.script={script}", f"grader.script={script}",
            "run.checkpointer=postgres", f"hydra.run.dir={run_dir}"]
    with cli_process(*args, cwd=tmp_path) as proc:
        _wait_for(run_dir, "tool_call_end")  # the grader's slow verdict call is next
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    thread_id = run_json(run_dir)["task"]["thread_id"]
    saved = _checkpoints(url, password, thread_id)
    assert saved > 0

    resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    record = run_json(run_dir)
    assert (record["status"], record["resumed"], record["task"]["thread_id"]) == ("satisfied", 1, thread_id)
    assert (record["task"]["usage"]["worker"]["calls"], record["task"]["usage"]["grader"]["calls"]) == (2, 4)  # nothing redone
    assert [e["result"] for e in record["task"]["evaluations"]] == ["needs_revision", "satisfied"]
    assert _checkpoints(url, password, thread_id) == 1
    assert not (run_dir / "checkpoints.sqlite").exists()


def test_a_finished_thread_cut_to_its_latest_checkpoint_continues_from_postgres(tmp_path, pg_env):
    url, password = pg_env
    script = write_script(tmp_path / "s.yaml", [{"content": "draft"}, {"content": "final"}, {"content": "docstring added"}],
                          [verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True)), verdict("satisfied", ("c", True))])
    counts = {}
    for keep in ("all", "latest"):
        run_dir = tmp_path / keep
        proc = run_cli(*scripted_overrides(script, "run.checkpointer=postgres", f"run.keep_checkpoints={keep}"),
                       f"hydra.run.dir={run_dir}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        thread_id = run_json(run_dir)["task"]["thread_id"]
        with psycopg.connect(url, password=password) as db:
            counts[keep] = [db.execute(f"SELECT count(*) FROM {table} WHERE thread_id = %s", (thread_id,)).fetchone()[0]
                            for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs")]
    assert counts["latest"][:2] == [1, 0] and counts["all"][0] > 4
    assert counts["latest"][2] < counts["all"][2]  # only the blobs the kept checkpoint reads

    turn = run_cli("continue", str(run_dir), "Now add a docstring", cwd=tmp_path)
    assert turn.returncode == 0, turn.stderr
    record = run_json(run_dir / "tasks" / "task-r0" / "turns" / "2")
    assert (record["status"], record["task"]["final_answer"]) == ("satisfied", "docstring added")
    contents = [m["data"]["content"] for m in json.loads((run_dir / "tasks" / "task-r0" / "turns" / "2" / "tasks" / "task-r0" / "transcript.json").read_text())["messages"]]
    assert contents.index("draft") < contents.index("final") < contents.index("Now add a docstring")
    assert _checkpoints(url, password, thread_id) == 1


def test_a_sweep_of_parallel_jobs_sets_up_one_fresh_database(tmp_path, postgres, monkeypatch):
    """A joblib sweep of two jobs on an empty database: the tables get set up, both jobs checkpoint there."""
    url, password = postgres
    with psycopg.connect(url, password=password, autocommit=True) as db:
        db.execute("CREATE DATABASE sweep")
    fresh = url.rsplit("/", 1)[0] + "/sweep"
    monkeypatch.setenv(POSTGRES_URL_ENV, fresh)
    monkeypatch.setenv("PGPASSWORD", password)
    script = write_script(tmp_path / "s.yaml", [{"content": "x"}], [verdict("satisfied", ("c", True))])
    sweep_dir = tmp_path / "sweep"
    proc = run_cli("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *scripted_overrides(script),
                   "run.checkpointer=postgres", "worker.model=scripted:alpha,scripted:beta",
                   f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [run_json(sweep_dir / job) for job in ("0", "1")]
    assert [r["status"] for r in records] == ["satisfied", "satisfied"]
    assert all(_checkpoints(fresh, password, r["task"]["thread_id"]) > 0 for r in records)


def test_postgres_without_a_database_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    with pytest.raises(UsageError, match=POSTGRES_URL_ENV) as caught:
        validate(compose_config(["worker=scripted", "grader=scripted", "run.checkpointer=postgres"]))
    assert caught.value.key == "run.checkpoint_url"
    script = write_script(tmp_path / "s.yaml", [{"content": "x"}], [verdict("satisfied", ("c", True))])
    proc = run_cli(*scripted_overrides(script, "run.checkpointer=postgres"), f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"run.checkpoint_url: run.checkpointer=postgres needs a database (set {POSTGRES_URL_ENV}=" in proc.stdout + proc.stderr


@pytest.mark.parametrize("url", ["postgresql://rubric:hunter2-long@db:5432/rubric", "host=db user=rubric password=hunter2-long"])
def test_a_password_in_checkpoint_url_is_refused(url):
    with pytest.raises(UsageError, match="passwords are not accepted in config") as caught:
        validate(compose_config(["worker=scripted", "grader=scripted", "run.checkpointer=postgres", f"run.checkpoint_url='{url}'"]))
    assert caught.value.key == "run.checkpoint_url"
