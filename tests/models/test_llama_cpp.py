"""The real pair, end to end: llama-cpp-python's OpenAI-compatible server and a small GGUF model as both
worker and grader, the grader's strategy chosen by auto's probe.

Opt-in (marker ``llama_cpp``), skipped unless both are given:

    LLAMA_CPP_PYTHON=/path/to/venv/bin/python   # a Python with llama-cpp-python[server] installed
    LLAMA_CPP_MODEL=/path/to/model.gguf         # e.g. Qwen2.5-Coder-0.5B-Instruct Q4_K_M
    .venv/bin/python -m pytest -m llama_cpp -s tests/models/test_llama_cpp.py

Each run prints its console trail (``-s`` shows it). A 0.5B model on a CPU takes minutes per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support.helpers import free_port, run_cli

PYTHON = os.environ.get("LLAMA_CPP_PYTHON", "")
MODEL = os.environ.get("LLAMA_CPP_MODEL", "")
pytestmark = [
    pytest.mark.llama_cpp,
    pytest.mark.skipif(not (Path(PYTHON).is_file() and Path(MODEL).is_file()),
                       reason="set LLAMA_CPP_PYTHON (llama-cpp-python[server]) and LLAMA_CPP_MODEL (a GGUF file)"),
]
ALIAS = "local-gguf"


@pytest.fixture(params=["template", "chatml-function-calling"])
def server(request, tmp_path):
    """A llama-cpp-python server on a free loopback port: the model's own chat template, or chatml-function-calling."""
    port = free_port()
    command = [PYTHON, "-m", "llama_cpp.server", "--model", MODEL, "--model_alias", ALIAS, "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "8192"]
    if request.param != "template":
        command += ["--chat_format", request.param]
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                break
        except OSError:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            time.sleep(0.5)
    try:
        yield request.param, base_url
    finally:
        proc.terminate()  # the server finishes a reply in flight before it stops: give it a moment, no more
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_real_pair_end_to_end(server, tmp_path):
    chat_format, base_url = server
    run_dir = tmp_path / "run"
    model = [f"model=openai:{ALIAS}", f"base_url={base_url}", "timeout=600", "max_retries=0", "temperature=0",
             "max_tokens=768"]
    proc = run_cli(
        "rubric=code", *(f"{role}.{setting}" for role in ("worker", "grader") for setting in model),
        "grader.max_iterations=2", "grader.max_model_calls=8", f"hydra.run.dir={run_dir}",
        cwd=tmp_path, env={"OPENAI_API_KEY": "not-checked-by-llama-cpp"}, timeout=3600,
    )
    print(f"\n--- {chat_format}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    record = json.loads((run_dir / "result.json").read_text())
    # what auto's probe found is what was measured on this server: required ignored (the model's own
    # template) or refused (chatml-function-calling), json_schema refused, a named tool choice works
    assert record["grader"]["strategy"] == "named"
    probe = record["grader"]["probe"]
    assert probe["named"] == "works"
    assert probe["tool"] == ("ignored: answered in text" if chat_format == "template" else "HTTP 500: (empty error message)")
    assert record["usage"]["worker"]["calls"] >= 1 and record["final_answer"]
    assert record["status"] in ("satisfied", "max_iterations_reached", "failed", "unsupported", "grader_error")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    grader_tests = [e for e in events if e["event"] == "tool_call_end" and e["agent"] == "grader"]
    verdicts = [e for e in record["evaluations"] if e["result"] != "grader_error"]
    # a verdict came back through the named tool; one that passes the tests without running them is not accepted
    assert verdicts, record["evaluations"]
    for evaluation in verdicts:
        assert evaluation["result"] != "satisfied" or grader_tests or evaluation.get("unsupported")
