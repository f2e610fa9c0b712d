"""LangSmith tracing over the wire: the real `langsmith` client posts each task's trace to a loopback
server standing in for the LangSmith endpoint; its name, tags and metadata find the task, and no key
is in what it posts."""

from __future__ import annotations

import email.parser
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.helpers import SCRIPTED_EVIDENCE, run_cli, run_json, verdict, write_script
from support.wire import FAKE_KEYS

LANGSMITH_KEY = "lsv2_pt_FAKElangsmithKEY0123456789abcdef"


class FakeLangSmith:
    """A loopback LangSmith API: answers ``/info`` and accepts run ingestion, keeping every body."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, Any, bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                self._reply(b"{}")

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.bodies.append((self.path, self.headers, body))
                self._reply(b"{}")

            do_PATCH = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeLangSmith:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def runs(self) -> dict[str, dict[str, Any]]:
        """Every run posted, by id: the created fields with the updates merged in (metadata too)."""
        runs: dict[str, dict[str, Any]] = {}
        for path, headers, body in self.bodies:
            assert headers.get("Content-Encoding") is None, headers
            if path.endswith("/runs/multipart"):
                message = email.parser.BytesParser().parsebytes(
                    f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode() + body)
                parts = [(part.get_param("name", header="content-disposition"), json.loads(part.get_payload(decode=True)))
                         for part in message.get_payload()]
            else:  # /runs/batch
                data = json.loads(body)
                parts = [(f"{op}.{run['id']}", run) for op in ("post", "patch") for run in data.get(op) or []]
            for name, value in parts:
                _, run_id, *field = name.split(".")
                run = runs.setdefault(run_id, {})
                if field:
                    run[field[0]] = value
                else:
                    metadata = {**run.get("extra", {}).get("metadata", {}), **(value.get("extra") or {}).get("metadata", {})}
                    run.update(value)
                    run.setdefault("extra", {})["metadata"] = metadata
        return runs


def test_each_task_is_traced_under_a_name_tags_and_metadata_and_no_key_is_posted(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "draft"}], grader=[verdict("satisfied", ("c", True))])
    sweep_dir = tmp_path / "sweep"
    with FakeLangSmith() as server:
        env = {**FAKE_KEYS, "LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": server.url,
               "LANGSMITH_API_KEY": LANGSMITH_KEY, "LANGSMITH_PROJECT": "rubric-tests"}
        result = run_cli("-m", "worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}",
                         "run.console=false", "run.repeats=2", "tags=[nightly]", f"hydra.sweep.dir={sweep_dir}",
                         cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        runs = server.runs()

    for _, headers, body in server.bodies:
        assert headers.get("X-Api-Key") == LANGSMITH_KEY  # the key authenticates the requests ...
        for secret in (LANGSMITH_KEY, *FAKE_KEYS.values()):
            assert secret.encode() not in body  # ... and is in no body, nor is any provider key

    roots = sorted((run for run in runs.values() if run.get("name", "").startswith("rubric_runner ")), key=lambda r: r["name"])
    assert [run["name"] for run in roots] == ["rubric_runner haiku task-r0", "rubric_runner haiku task-r1"]
    for repeat, root in enumerate(roots):
        task_dir = sweep_dir / "0" / "tasks" / f"task-r{repeat}"
        record = run_json(task_dir)
        assert root.get("parent_run_id") is None and root["session_name"] == "rubric-tests"
        assert set(root["tags"]) >= {"worker:scripted:demo", "grader:scripted:demo", "rubric:haiku", "task:task",
                                     f"repeat:{repeat}", "nightly"}
        metadata = root["extra"]["metadata"]
        assert metadata["run_dir"] == str(task_dir) and metadata["thread_id"] == record["thread_id"]
        assert metadata["grading_run_id"] == record["grading_run_id"] and record["grading_run_id"]
        assert metadata["sweep_dir"] == str(sweep_dir) and metadata["sweep_job"] == "0"
        assert root["outputs"]["status"] == "satisfied" and root["inputs"] == {"task": record["task"]}
        # the agent's own runs sit in the task's trace and carry its tags, so a model call is found by task too
        inside = [run for run in runs.values() if run.get("trace_id") == root["id"] and run is not root]
        assert {run["run_type"] for run in inside} >= {"chain", "llm"}
        assert all(f"repeat:{repeat}" in run.get("tags", []) for run in inside if run["run_type"] == "llm")


def test_without_tracing_nothing_is_posted(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "draft"}], grader=[verdict("satisfied", ("c", True))])
    with FakeLangSmith() as server:
        env = {"LANGSMITH_TRACING": "false", "LANGSMITH_ENDPOINT": server.url, "LANGSMITH_API_KEY": LANGSMITH_KEY}
        result = run_cli("worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}",
                         f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert server.bodies == []
    assert json.loads(Path(tmp_path / "run" / "result.json").read_text())["status"] == "satisfied"
