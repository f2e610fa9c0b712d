"""The disk backends' files dir as a copy of the worker's state: a dir read into the state as its bytes are,
the state written back into a dir whole, and the files a thread goes on with after a kill."""

from __future__ import annotations

import asyncio
import base64

import pytest

from rubric_runner.loop.mirror import changes, dir_files, file_data, materialise, saved_files
from rubric_runner.tools.files import file_text


def test_a_dirs_files_go_to_the_state_as_their_bytes_are(tmp_path):
    """Line endings as written (the seed is read so too), a file that is not UTF-8 as base64 (read as text with
    replacements), a symlink left out; against a state, only what differs: new, changed, and None for gone."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (tmp_path / "latin.bin").write_bytes(b"caf\xe9\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "latin.bin")
    found = changes(tmp_path, {})
    assert sorted(found) == ["/latin.bin", "/src/crlf.txt"]
    assert found["/src/crlf.txt"]["content"] == "a\r\nb\r\n" and found["/src/crlf.txt"]["encoding"] == "utf-8"
    assert found["/latin.bin"]["encoding"] == "base64" and base64.b64decode(found["/latin.bin"]["content"]) == b"caf\xe9\n"
    assert file_text(found["/latin.bin"]) == "caf\ufffd\n"
    state = {**found, "/gone.txt": file_data(b"x"), "/src/crlf.txt": file_data(b"a\nb\n", "2026-01-01")}
    again = changes(tmp_path, state)
    assert again == {"/gone.txt": None, "/src/crlf.txt": again["/src/crlf.txt"]}
    assert again["/src/crlf.txt"]["content"] == "a\r\nb\r\n" and again["/src/crlf.txt"]["created_at"] == "2026-01-01"


def test_a_dir_is_made_to_hold_the_state_and_nothing_else(tmp_path):
    root = tmp_path / "files"
    (root / "src" / "build").mkdir(parents=True)
    (root / "src" / "a.py").write_text("half")  # a file cut off mid-write
    (root / ".a.py.123.tmp").write_text("x")  # and another writer's temp file
    (root / "stray.txt").write_text("written after the checkpoint")
    (root / "report").mkdir()  # a dir where the state has a file
    (root / "link").symlink_to(tmp_path)
    (tmp_path / "outside.txt").write_text("kept")
    state = {"/src/a.py": file_data(b"print('a')\r\n"), "/report": file_data(b"# R\n"), "/img.bin": file_data(b"\x89PNG\xff")}
    materialise(root, state)
    assert dir_files(root) == {"/img.bin": b"\x89PNG\xff", "/report": b"# R\n", "/src/a.py": b"print('a')\r\n"}
    assert sorted(path.name for path in root.rglob("*")) == ["a.py", "img.bin", "report", "src"]  # no link, no empty dir
    assert (tmp_path / "outside.txt").read_text() == "kept"
    with pytest.raises(ValueError, match="no place in its workspace"):
        materialise(root, {"/../escape.txt": file_data(b"x")})
    assert not (tmp_path / "escape.txt").exists()


def _killed_thread():
    """A thread whose step ran three tasks at once: one finished (its file write kept), one called a subagent
    that saved a write and a delete before it died, one died: the thread is left as a kill leaves it."""
    from deepagents.middleware.filesystem import FilesystemState
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    def subagent_write(state):
        return {"files": {"/sub.txt": file_data(b"by the subagent\n"), "/seed.txt": None}}

    async def dies(state):
        await asyncio.sleep(0.2)
        raise RuntimeError("killed")

    inner = StateGraph(FilesystemState)
    inner.add_node("write", subagent_write)
    inner.add_node("dies", dies)
    inner.add_edge(START, "write")
    inner.add_edge("write", "dies")
    subagent = inner.compile()

    async def tools(state):  # the task tool: the subagent, called with the caller's files
        return await subagent.ainvoke({"messages": [], "files": state["files"]})

    outer = StateGraph(FilesystemState)
    outer.add_node("done", lambda state: {"files": {"/done.txt": file_data(b"finished\n")}})
    outer.add_node("tools", tools)
    outer.add_node("dies", dies)
    for node in ("done", "tools", "dies"):
        outer.add_edge(START, node)
    return outer.compile(checkpointer=InMemorySaver())


def test_a_thread_goes_on_with_its_checkpoint_the_finished_tasks_writes_and_its_subagents_own():
    agent = _killed_thread()
    config = {"configurable": {"thread_id": "t"}}

    async def killed():
        with pytest.raises(RuntimeError, match="killed"):
            await agent.ainvoke({"messages": [], "files": {"/seed.txt": file_data(b"seed\n"), "/keep.txt": file_data(b"k\n")}},
                                config, durability="sync")
        return await saved_files(agent, config)

    files = asyncio.run(killed())
    assert {path: file_text(data) for path, data in files.items()} == {
        "/keep.txt": "k\n", "/done.txt": "finished\n", "/sub.txt": "by the subagent\n"}
    assert asyncio.run(saved_files(agent, {"configurable": {"thread_id": "new"}})) == {}
