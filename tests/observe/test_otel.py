"""OpenTelemetry over the wire: a scripted run in a process of its own sends OTLP/HTTP with the real SDK
exporter to a receiver on 127.0.0.1 that decodes each ExportTraceServiceRequest; its spans follow the
GenAI conventions, grading passes carry an evaluation event per criterion, and message content stays
out unless asked for."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.helpers import free_port, run_cli

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from rubric_runner.observe import otel  # noqa: E402


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attributes(items) -> dict:
    return {item.key: _value(item.value) for item in items}


class Receiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1: every span it is sent, decoded, with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.paths: list[str] = []
        spans, paths = self.spans, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                paths.append((self.path, self.headers["Content-Type"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    resource = _attributes(resource_spans.resource.attributes)
                    for scope in resource_spans.scope_spans:
                        for span in scope.spans:
                            spans.append({
                                "name": span.name, "id": span.span_id, "parent": span.parent_span_id, "trace": span.trace_id,
                                "attributes": _attributes(span.attributes), "resource": resource,
                                "events": [(event.name, _attributes(event.attributes)) for event in span.events],
                                "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                            })
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _traced_run(tmp_path, *overrides: str, **env: str) -> list[dict]:
    receiver = Receiver()
    try:
        proc = run_cli("worker=scripted", "grader=scripted", "run.console=false", f"hydra.run.dir={tmp_path / 'run'}", *overrides,
                       cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "rubric-tests", **env})
        assert proc.returncode == 0, proc.stderr
        assert receiver.paths and set(receiver.paths) == {("/v1/traces", "application/x-protobuf")}
        return receiver.spans
    finally:
        receiver.close()


@pytest.fixture(scope="module")
def spans(tmp_path_factory) -> list[dict]:
    """Two code_tasks tasks: find_duplicates revised once after a failing test, fizzbuzz passing at once."""
    return _traced_run(tmp_path_factory.mktemp("otel"), "rubric=code_tasks", "rubric.tasks=[find_duplicates,fizzbuzz]")


def _named(spans: list[dict], name: str) -> list[dict]:
    return [span for span in spans if span["name"] == name]


def test_each_task_is_a_span_with_its_model_calls_tools_and_grading_passes_under_it(spans):
    assert {span["resource"]["service.name"] for span in spans} == {"rubric-tests"}
    tasks = {span["attributes"]["rubric_runner.task.id"]: span for span in spans
             if span["attributes"].get("gen_ai.agent.name") == "worker"}
    assert sorted(tasks) == ["find_duplicates", "fizzbuzz"]
    task = tasks["find_duplicates"]
    assert task["name"] == "invoke_agent find_duplicates" and task["parent"] == b""
    assert task["attributes"]["gen_ai.operation.name"] == "invoke_agent" and task["attributes"]["gen_ai.conversation.id"]
    assert (task["attributes"]["rubric_runner.iterations"], task["attributes"]["rubric_runner.verdict"]) == (2, "satisfied")
    inside = [span for span in spans if span["trace"] == task["trace"] and span is not task]
    grading = sorted(_named(inside, "invoke_agent grader"), key=lambda span: span["start"])
    assert [span["parent"] for span in grading] == [task["id"]] * 2
    assert [span["attributes"]["rubric_runner.verdict"] for span in grading] == ["needs_revision", "satisfied"]
    chats = [span for span in inside if span["attributes"].get("gen_ai.operation.name") == "chat"]
    worker = [span for span in chats if span["attributes"]["rubric_runner.agent"] == "worker"]
    grader = [span for span in chats if span["attributes"]["rubric_runner.agent"] == "grader"]
    assert len(worker) == 2 and {span["parent"] for span in worker} == {task["id"]}
    assert len(grader) == 4 and {span["parent"] for span in grader} == {span["id"] for span in grading}
    for span in chats:
        assert span["name"] == "chat scripted:demo" and span["attributes"]["gen_ai.request.model"] == "scripted:demo"
        assert span["attributes"]["gen_ai.usage.input_tokens"] > 0 and span["attributes"]["gen_ai.usage.output_tokens"] > 0
        assert span["attributes"]["gen_ai.provider.name"] and span["start"] <= span["end"]
    tools = _named(inside, "execute_tool run_test_suite")
    assert len(tools) == 2 and {span["parent"] for span in tools} == {span["id"] for span in grading}
    assert {span["attributes"]["gen_ai.tool.name"] for span in tools} == {"run_test_suite"}


def test_each_grading_pass_has_an_evaluation_event_per_criterion(spans):
    task = next(span for span in spans if span["name"] == "invoke_agent find_duplicates")
    first = min((span for span in _named(spans, "invoke_agent grader") if span["parent"] == task["id"]), key=lambda span: span["start"])
    events = [attributes for name, attributes in first["events"] if name == "gen_ai.evaluation.result"]
    by_name = {event["gen_ai.evaluation.name"]: event for event in events}
    assert sorted(by_name) == ["All tests pass in run_test_suite", "The function has the name and signature given in the task", "rubric"]
    failing = by_name["All tests pass in run_test_suite"]
    assert (failing["gen_ai.evaluation.score.label"], failing["gen_ai.evaluation.score.value"]) == ("fail", 0.0)
    assert "test_unhashable fails" in failing["gen_ai.evaluation.explanation"]
    assert by_name["The function has the name and signature given in the task"]["gen_ai.evaluation.score.label"] == "pass"
    assert by_name["rubric"]["gen_ai.evaluation.score.label"] == "needs_revision"


def test_message_content_is_left_out_unless_asked_for(spans, tmp_path):
    assert not [span for span in spans if "gen_ai.input.messages" in span["attributes"] or "gen_ai.output.messages" in span["attributes"]]
    captured = _traced_run(tmp_path, "rubric=code", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    worker = [span for span in captured if span["attributes"].get("rubric_runner.agent") == "worker"
              and span["attributes"].get("gen_ai.operation.name") == "chat"]
    assert worker and all("gen_ai.input.messages" in span["attributes"] for span in worker)
    assert "find_duplicates" in worker[0]["attributes"]["gen_ai.input.messages"]
    assert "def find_duplicates" in worker[0]["attributes"]["gen_ai.output.messages"]


def test_a_collector_that_does_not_answer_changes_nothing_in_the_run(tmp_path):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    proc = run_cli("worker=scripted", "grader=scripted", "rubric=code", "run.console=false", f"hydra.run.dir={tmp_path / 'run'}",
                   cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "run" / "result.json").read_text())["status"] == "satisfied"
    assert "Failed to export" in proc.stderr


@pytest.mark.parametrize(("env", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "console,otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
])
def test_the_standard_variables_turn_traces_on(monkeypatch, env, on):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert otel.enabled() is on
