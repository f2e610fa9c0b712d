"""The four tests of the deepagents rubric docs' run_test_suite, as a pytest file."""

from solution import find_duplicates


def test_basic():
    assert find_duplicates([1, 2, 2, 3, 1]) == [2, 1]


def test_empty():
    assert find_duplicates([]) == []


def test_no_duplicates():
    assert find_duplicates([1, 2, 3]) == []


def test_unhashable():
    assert find_duplicates([[1], [1], 2]) == [[1]]
