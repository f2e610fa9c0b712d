"""worker.backend: the worker's files in the task's workspace dir, its commands in the sandbox, escapes refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import wire
from support.helpers import (
    compose_config,
    only_task,
    read_events,
    run_cli,
    run_in_process,
    run_scripted,
    task_dir_of,
    verdict,
    write_script,
)
from support.wire import FakeServer, model_overrides

from rubric_runner.config.validate import validate
from rubric_runner.errors import UsageError
from rubric_runner.sandbox import choose

SATISFIED = verdict("satisfied", ("Lines follow 5-7-5", True), ("The poem is about autumn", True))
needs_isolation = pytest.mark.skipif(choose("auto").backend is None, reason="nothing isolates here (rubric-runner doctor says why)")


def call(name: str, **args) -> dict:
    """A scripted worker turn that calls the tool ``name``."""
    return {"tool_calls": [{"name": name, "args": args}]}


def tool_events(run_dir: Path, tool: str) -> list[dict]:
    return [e for e in read_events(run_dir) if e.get("tool") == tool and e["event"] in ("tool_call_end", "tool_call_error")]


@needs_isolation
def test_a_file_written_then_run_on_the_sandbox_backend_is_in_the_tasks_dir_and_its_output_in_the_transcript(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[
        call("write_file", file_path="/src/hello.py", content="print('hello from the sandbox')\n"),
        call("execute", command="python3 src/hello.py && echo made > made.txt; exit 4"),
        {"content": "done"},
    ], grader=[SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, "worker.backend=sandbox")
    assert result.status == "satisfied"
    workspace = task_dir_of(run_dir) / "files"
    assert (workspace / "src" / "hello.py").read_text() == "print('hello from the sandbox')\n"
    assert (workspace / "made.txt").read_text() == "made\n"
    transcript = json.loads((task_dir_of(run_dir) / "transcript.json").read_text())
    answers = [m["data"]["content"] for m in transcript["messages"] if m["type"] == "tool" and m["data"]["name"] == "execute"]
    assert len(answers) == 1 and "hello from the sandbox" in answers[0] and "exit code 4" in answers[0]


@needs_isolation
def test_a_tasks_commands_share_one_sandbox_that_ends_with_the_task(tmp_path, monkeypatch):
    from deepagents.backends.sandbox import BaseSandbox

    from rubric_runner.loop.backends import TaskSandbox
    from rubric_runner.sandbox import ShellSession

    assert issubclass(TaskSandbox, BaseSandbox)
    started = []
    start = ShellSession._start

    def counted(self, backend):
        start(self, backend)
        started.append(self.process)

    monkeypatch.setattr(ShellSession, "_start", counted)
    script = write_script(tmp_path / "s.yaml", worker=[
        call("execute", command="sleep 60 & echo $! > pid"),
        call("write_file", file_path="/note.txt", content="written by the file tool\n"),
        call("execute", command="kill -0 $(cat pid) 2>/dev/null && echo still running || echo ended; cat note.txt"),
        {"content": "done"},
    ], grader=[SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, "worker.backend=sandbox")
    assert result.status == "satisfied"
    answers = [e["output"] for e in tool_events(run_dir, "execute")]
    assert "ended\nwritten by the file tool" in answers[1]
    assert len(started) == 1 and started[0].poll() is not None  # one sandbox for the task's commands, ended with it


@needs_isolation
def test_paths_out_of_the_workspace_are_refused_by_the_backend_and_recorded_as_tool_errors(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    script = write_script(tmp_path / "s.yaml", worker=[
        call("write_file", file_path="/../escape.txt", content="x"),
        call("execute", command=f"ln -s {outside} out"),
        call("write_file", file_path="/out/escape.txt", content="x"),
        call("read_file", file_path="/out/escape.txt"),
        {"content": "done"},
    ], grader=[SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, "worker.backend=sandbox")
    assert result.status == "satisfied"
    assert list(outside.iterdir()) == [] and not (run_dir.parent / "escape.txt").exists()
    writes, reads = tool_events(run_dir, "write_file"), tool_events(run_dir, "read_file")
    assert [e["event"] for e in writes + reads] == ["tool_call_error"] * 3
    assert "Path traversal not allowed" in writes[0]["error"]
    assert "outside root directory" in writes[1]["error"] and "outside root directory" in reads[0]["error"]


def test_the_filesystem_backend_keeps_the_files_in_each_tasks_workspace_and_has_no_execute(tmp_path):
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i, "task": f"do {i}"}) + "\n" for i in ("a", "b")))
    script = write_script(tmp_path / "s.yaml", worker=[
        call("write_file", file_path="/notes.md", content="# notes\n"),
        call("execute", command="touch ran"),
        {"content": "done"},
    ], grader=[SATISFIED])
    result, run_dir = run_scripted(tmp_path, script, "worker.backend=filesystem", f"rubric.dataset={tmp_path / 'tasks.jsonl'}")
    assert result.status == "satisfied"
    for task in ("a-r0", "b-r0"):
        workspace = run_dir / "tasks" / task / "files"
        assert sorted(p.name for p in workspace.iterdir()) == ["notes.md"]
    assert not (run_dir / "notes.md").exists()


HELPER = "worker.subagents=[{name: helper, description: writes notes, system_prompt: You write notes.}]"


@pytest.mark.parametrize("backend", ["state", "filesystem"])
def test_a_subagents_work_through_the_task_tool_is_in_the_record(tmp_path, backend):
    script = tmp_path / "s.yaml"
    write_script(script, worker=[
        call("task", description="write the notes", subagent_type="helper"),
        call("read_file", file_path="/notes.md"),
        {"content": "done"},
    ], grader=[SATISFIED])
    data = yaml.safe_load(script.read_text())
    data["helper"] = [call("write_file", file_path="/notes.md", content="# notes by the helper\n"), {"content": "the notes are in /notes.md"}]
    script.write_text(yaml.safe_dump(data))
    result, run_dir = run_scripted(tmp_path, script, HELPER, f"worker.backend={backend}")
    assert result.status == "satisfied"
    events = read_events(run_dir)
    task_ends = [e for e in events if e["event"] == "tool_call_end" and e["tool"] == "task"]
    assert [e["agent"] for e in task_ends] == ["worker"] and "the notes are in /notes.md" in task_ends[0]["output"]
    helper = [e for e in events if e.get("agent") == "subagent:helper" and e["event"] == "tool_call_end"]
    assert [e["tool"] for e in helper] == ["write_file"]
    reads = tool_events(run_dir, "read_file")
    assert "# notes by the helper" in reads[0]["output"]
    assert only_task(result).usage["worker"].calls == 5  # the worker's three replies and the helper's two, within the task call
    if backend == "filesystem":
        assert (task_dir_of(run_dir) / "files" / "notes.md").read_text() == "# notes by the helper\n"


def test_skills_and_memory_reach_the_workers_prompt_and_are_never_written(tmp_path, fake_keys):
    skills = tmp_path / "skills"
    (skills / "haiku-form").mkdir(parents=True)
    (skills / "haiku-form" / "SKILL.md").write_text("---\nname: haiku-form\ndescription: counts syllables in a haiku\n---\n# How\ncount.\n")
    memory = tmp_path / "project" / "AGENTS.md"
    memory.parent.mkdir()
    memory.write_text("Always answer in haiku.\n")
    (memory.parent / "secret.txt").write_text("not shown")
    worker = FakeServer("openai", [
        wire.call("read_file", file_path="/.skills/0/haiku-form/SKILL.md"),
        wire.call("write_file", file_path="/.skills/0/haiku-form/SKILL.md", content="changed"),
        wire.call("read_file", file_path="/.memory/0/secret.txt"),
        wire.text("done"),
    ])
    with worker, FakeServer("openai", [wire.verdict("satisfied", ("Lines follow 5-7-5", True), ("The poem is about autumn", True))]) as grader:
        result, run_dir = run_in_process(tmp_path, *model_overrides("worker", worker), *model_overrides("grader", grader),
                                         "grader.structured_output=tool", f"worker.skills=[{skills}]", f"worker.memory=[{memory}]")
    assert result.status == "satisfied"
    prompt = json.dumps(worker.requests[0].json["messages"][0])
    assert "Always answer in haiku." in prompt and "counts syllables in a haiku" in prompt and "/.skills/0/haiku-form/SKILL.md" in prompt
    reads, writes = tool_events(run_dir, "read_file"), tool_events(run_dir, "write_file")
    assert "count." in reads[0]["output"]
    assert writes[0]["event"] == "tool_call_error" and "read-only" in writes[0]["error"]
    assert reads[1]["event"] == "tool_call_error" and "only AGENTS.md is shown here" in reads[1]["error"]
    assert (skills / "haiku-form" / "SKILL.md").read_text().endswith("count.\n")


def test_an_unknown_backend_is_one_line_naming_the_key(tmp_path):
    ran = run_cli("worker=scripted", "grader=scripted", "rubric=code", "worker.backend=docker", cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == ["error: worker.backend: Invalid value 'docker', expected one of "
                                               "[state, sandbox, filesystem] (fix the value in the override)"]


@pytest.mark.parametrize(("override", "line"), [
    ("worker.subagents=[{description: d}]", "worker.subagents[0].name: Structured config of type `SubagentConfig` has missing mandatory value: name"),
    ("worker.subagents=[{name: a, description: d},{name: a, description: e}]", "worker.subagents[1].name: a second subagent named 'a'"),
    ("worker.subagents=[{name: 'a b', description: d}]", "worker.subagents[0].name: 'a b' is not a name the task tool can call"),
    ("worker.subagents=[{name: a, description: ' '}]", "worker.subagents[0].description: is empty"),
    ("worker.subagents=[{name: a, description: d, model: nosuch}]", "worker.subagents[0].model: 'nosuch' is neither a model group nor provider:model-id"),
    ("worker.skills=[/nonexistent]", "worker.skills[0]: /nonexistent is not a dir"),
    ("worker.memory=[/nonexistent/AGENTS.md]", "worker.memory[0]: /nonexistent/AGENTS.md is not a file"),
])
def test_a_mistake_in_the_worker_is_one_line_naming_the_key(override, line):
    with pytest.raises(UsageError) as raised:
        validate(compose_config(["worker=scripted", "grader=scripted", "rubric=code", override]))
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value)
