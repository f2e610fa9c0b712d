import pytest
from todo import TodoList


def test_a_blank_title_is_refused():
    with pytest.raises(ValueError):
        TodoList().add("  ")


def test_done_needs_a_known_title():
    todos = TodoList()
    todos.add("milk")
    with pytest.raises(KeyError):
        todos.done("bread")
