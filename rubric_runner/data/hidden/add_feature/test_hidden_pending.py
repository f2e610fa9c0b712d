from pathlib import Path

from todo import TodoList


def test_pending_keeps_the_order_added():
    todos = TodoList()
    for title in ("milk", "bread", "eggs"):
        todos.add(title)
    todos.done("bread")
    assert todos.pending() == ["milk", "eggs"]


def test_pending_of_an_empty_list():
    assert TodoList().pending() == []


def test_the_feature_comes_with_its_tests():
    tests = Path("tests/test_pending.py")
    assert tests.is_file() and "pending()" in tests.read_text(encoding="utf-8")
