"""run.keep_checkpoints: a finished task's thread cut to its latest checkpoint, which still holds the
whole thread (dropped whole from memory); resume and follow-up turns on such runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from pathlib import Path

from support.forks import Forks
from support.helpers import (
    SCRIPTED_EVIDENCE,
    cli_process,
    only_task,
    run_cli,
    run_json,
    run_scripted,
    task_dir_of,
    verdict,
    write_dataset,
    write_script,
)

from rubric_runner.cli import run_command
from rubric_runner.compat.langgraph import RunMemorySaver
from rubric_runner.loop.checkpoints import InlineSqliteSaver, keep_latest, trim_finished

NOTE = "x" * 4000
STEPS = 12


def _long_task_script(path: Path) -> Path:
    """A dozen write_file steps of 4 KB each (a ~50 KB transcript), then three answers and three grading passes."""
    writes = [{"content": f"note {i}", "tool_calls": [{"name": "write_file", "args": {"file_path": f"/notes/{i}.md", "content": NOTE}}]}
              for i in range(STEPS)]
    return write_script(path, worker=[*writes, {"content": "draft"}, {"content": "better"}, {"content": "final"}],
                        grader=[verdict("needs_revision", ("c", False)), verdict("needs_revision", ("c", False)),
                                verdict("satisfied", ("c", True))])


def _stored(path: Path) -> tuple[int, int, int]:
    """Checkpoint rows, write rows, and the bytes of both in a run's checkpoints.sqlite."""
    with sqlite3.connect(path) as db:
        rows, checkpoint_bytes = db.execute("SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints").fetchone()
        writes, write_bytes = db.execute("SELECT count(*), coalesce(sum(length(value)), 0) FROM writes").fetchone()
    return rows, writes, checkpoint_bytes + write_bytes


def test_a_many_step_task_keeps_checkpoint_bytes_of_its_final_state(tmp_path):
    script = _long_task_script(tmp_path / "s.yaml")
    sizes = {}
    for keep in ("all", "latest"):
        record, run_dir = run_scripted(tmp_path / keep, script, f"run.keep_checkpoints={keep}")
        assert (record.status, only_task(record).iterations) == ("satisfied", 3), record.error
        sizes[keep] = _stored(run_dir / "checkpoints.sqlite")
        transcript = (task_dir_of(run_dir) / "transcript.json").stat().st_size
    final_state = transcript + STEPS * len(NOTE)  # the messages and the files written
    assert transcript > 50_000
    rows, writes, latest = sizes["latest"]
    assert (rows, writes) == (1, 0)
    assert latest < 1.2 * final_state  # the final state, once: not one copy per step
    assert sizes["all"][0] > 2 * STEPS and sizes["all"][2] > 3 * latest

    with sqlite3.connect(tmp_path / "latest" / "run" / "checkpoints.sqlite", check_same_thread=False) as db:
        (kept,) = InlineSqliteSaver(db).list({"configurable": {"thread_id": only_task(record).thread_id}})
    messages = json.loads((task_dir_of(tmp_path / "latest" / "run") / "transcript.json").read_text())["messages"]
    assert [m.content for m in kept.checkpoint["channel_values"]["messages"].value] == [m["data"]["content"] for m in messages]
    assert sorted(kept.checkpoint["channel_values"]["files"].value) == sorted(f"/notes/{i}.md" for i in range(STEPS))
    assert kept.parent_config is None


def _graph(checkpointer, worker: list[dict]):
    from deepagents import RubricMiddleware, create_deep_agent

    from rubric_runner.models.scripted import ScriptedChatModel

    grader = ScriptedChatModel(model="scripted:g", turns=[verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True)),
                                                           verdict("satisfied", ("c", True))])
    worker_model = ScriptedChatModel(model="scripted:w", turns=worker)
    return create_deep_agent(model=worker_model, middleware=[RubricMiddleware(model=grader)], checkpointer=checkpointer)


def test_keep_latest_leaves_one_checkpoint_that_reads_and_continues_as_the_whole_thread(tmp_path):
    from langchain_core.messages import HumanMessage

    checkpointer = InlineSqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    worker = [{"content": "", "tool_calls": [{"name": "write_file", "args": {"file_path": "/a.md", "content": "A"}}]},
              {"content": "first"}, {"content": "second"}, {"content": "third"}]
    graph = _graph(checkpointer, worker)
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> None:
        other = {"configurable": {"thread_id": "u"}}
        for thread in (config, other):
            await graph.ainvoke({"messages": [HumanMessage("go")], "rubric": "- c"}, thread)
        before, other_before = [(await graph.aget_state(thread)).values for thread in (config, other)]
        other_steps = len([c async for c in checkpointer.alist(other)])
        assert len([c async for c in checkpointer.alist(config)]) > 5
        assert await keep_latest(checkpointer, graph, "t") is True
        (kept,) = [c async for c in checkpointer.alist(config)]
        assert len([c async for c in checkpointer.alist(other)]) == other_steps  # another thread is left as it was
        assert (await graph.aget_state(other)).values == other_before
        after = (await graph.aget_state(config)).values
        assert after == before and after["files"]["/a.md"]
        # a follow-up turn on the cut thread sees the whole conversation and grades anew
        await graph.ainvoke({"messages": [HumanMessage("again")]}, config)
        state = (await graph.aget_state(config)).values
        assert [m.content for m in state["messages"]][: len(before["messages"])] == [m.content for m in before["messages"]]
        assert state["messages"][-1].content == "third" and state["_rubric_status"] == "satisfied"
        assert state["files"]["/a.md"] == before["files"]["/a.md"]

    asyncio.run(main())


def test_a_finished_memory_thread_is_dropped_whole_and_the_others_kept():
    from langchain_core.messages import HumanMessage

    saver = RunMemorySaver()
    worker = [{"content": "", "tool_calls": [{"name": "write_file", "args": {"file_path": "/a.md", "content": "A"}}]},
              {"content": "first"}, {"content": "second"}]
    graph = _graph(saver, worker)
    config, other = ({"configurable": {"thread_id": thread}} for thread in ("t", "u"))

    async def main() -> None:
        for thread in (config, other):
            await graph.ainvoke({"messages": [HumanMessage("go")], "rubric": "- c"}, thread)
        other_before = (await graph.aget_state(other)).values
        other_steps = len([c async for c in saver.alist(other)])
        assert any(key[0] == "t" for key in saver.blobs) and any(key[0] == "t" for key in saver.writes)
        await trim_finished(saver, graph, "t")
        # no checkpoint, write or blob is left of the thread
        assert "t" not in saver.storage and "t" not in saver.thread_blobs
        assert not any(key[0] == "t" for key in saver.blobs) and not any(key[0] == "t" for key in saver.writes)
        assert [c async for c in saver.alist(config)] == []
        assert len([c async for c in saver.alist(other)]) == other_steps  # another thread is left as it was
        assert (await graph.aget_state(other)).values == other_before

    asyncio.run(main())


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] if path.exists() else []


def test_resume_and_continue_on_a_run_whose_finished_tasks_were_cut(tmp_path, capsys):
    """Two tasks finish (their threads cut to one checkpoint), one is interrupted mid-grading; resume
    reuses the two, finishes the third from its checkpoint, and a finished task's thread continues."""
    dataset = write_dataset(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "answer"}, {"content": "follow-up answer"}],
                          grader=[verdict("satisfied", ("c", True))] * 2,
                          tasks={"c": {"worker": [{"content": "draft"}, {"content": "final"}],
                                       "grader": [{**verdict("needs_revision", ("c", False)), "latency": 3},
                                                  verdict("satisfied", ("c", True))]}})
    run_dir = tmp_path / "run"
    args = ["worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, f"worker.script={script}", f"grader.script={script}",
            f"rubric.dataset={dataset}", "run.concurrency=3", f"hydra.run.dir={run_dir}"]
    with cli_process(*args, cwd=tmp_path) as proc:
        deadline = time.monotonic() + 60
        while {e.get("task_id") for e in _events(run_dir) if e["event"] == "task_end"} != {"a", "b"}:
            assert time.monotonic() < deadline, "tasks a and b never ended"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)

    def record(task: str) -> dict:
        return run_json(run_dir / "tasks" / f"{task}-r0")

    def checkpoints(task: str) -> int:
        with sqlite3.connect(run_dir / "checkpoints.sqlite") as db:
            return db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (record(task)["thread_id"],)).fetchone()[0]

    assert [record(t)["status"] for t in "abc"] == ["satisfied", "satisfied", "interrupted"]
    assert checkpoints("a") == checkpoints("b") == 1 and checkpoints("c") > 1

    resumed = run_cli("resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    c = record("c")
    assert (c["status"], c["resumed"]) == ("satisfied", 1)
    assert (c["usage"]["worker"]["calls"], c["usage"]["grader"]["calls"]) == (2, 2)  # nothing redone
    assert [e["result"] for e in c["evaluations"]] == ["needs_revision", "satisfied"]
    assert record("a")["resumed"] == 0 and [checkpoints(t) for t in "abc"] == [1, 1, 1]

    assert run_command(["continue", "--task", "a", str(run_dir), "Now add a docstring"]) == 0
    turn_dir = run_dir / "tasks" / "a-r0" / "turns" / "2"
    turn = run_json(turn_dir)
    assert (turn["status"], turn["task"]["final_answer"]) == ("satisfied", "follow-up answer")
    contents = [m["data"]["content"] for m in json.loads((turn_dir / "tasks" / "a-r0" / "transcript.json").read_text())["messages"]]
    assert contents[:2] == ["do a", "answer"] and "Now add a docstring" in contents
    assert checkpoints("a") == 1


def test_a_many_task_run_killed_again_and_again_resumes_to_the_end(tmp_path):
    """SIGKILL lands anywhere, between a scripted reply and its checkpoint too: each resume goes on from the
    threads' saved messages, and no task finds its script used up."""
    ids = [f"t{i:02d}" for i in range(40)]
    dataset = write_dataset(tmp_path / "tasks.jsonl", ids)
    script = write_script(tmp_path / "s.yaml", worker=[{"content": "draft", "latency": 0.01}, {"content": "final"}],
                          grader=[verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))])
    run_dir = tmp_path / "run"
    args = ["worker=scripted", "grader=scripted", SCRIPTED_EVIDENCE, "run.console=false", f"worker.script={script}",
            f"grader.script={script}", f"rubric.dataset={dataset}", "run.concurrency=4", f"hydra.run.dir={run_dir}"]
    forks = Forks(dict(os.environ), tmp_path)  # four runs, each forked: no interpreter start-up each time
    try:
        for kill_after in (6, 18, 30):
            child = forks.start(args, tmp_path)
            deadline = time.monotonic() + 120
            while True:
                running = forks.poll(child) is None  # asked before the events are read: a run that ends meanwhile has written them
                if sum(e["event"] == "task_end" for e in _events(run_dir)) >= kill_after:
                    break
                assert time.monotonic() < deadline and running, "the run ended before it could be killed"
                time.sleep(0.01)
            forks.signal(child, signal.SIGKILL)
            assert forks.wait(child)[0] == -signal.SIGKILL
            args = ["resume", str(run_dir)]
        code, out, err = forks.wait(forks.start(args, tmp_path))
    finally:
        forks.close()
    assert code == 0, out + err
    record = run_json(run_dir)
    assert record["aggregate"]["statuses"] == {"satisfied": 40} and record["resumed"] == 3
    for task in ids:
        done = run_json(run_dir / "tasks" / f"{task}-r0")
        assert [e["result"] for e in done["evaluations"]] == ["needs_revision", "satisfied"], task
        assert done["final_answer"] == "final", task
        transcript = json.loads((run_dir / "tasks" / f"{task}-r0" / "transcript.json").read_text())["messages"]
        assert [m["data"]["content"] for m in transcript].count(f"do {task}") == 1, task  # never started over
