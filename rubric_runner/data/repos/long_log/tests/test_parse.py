import pytest
from parse import parse_line

CASES = [(f"key{number} = value{number}", (f"key{number}", f"value{number}")) for number in range(1500)]


@pytest.mark.parametrize("line, expected", CASES)
def test_parse(line, expected):
    assert parse_line(line) == expected


def test_value_with_equals():
    assert parse_line("url = a=b") == ("url", "a=b")
