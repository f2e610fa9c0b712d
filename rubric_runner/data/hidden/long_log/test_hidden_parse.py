from parse import parse_line


def test_two_equals():
    assert parse_line("expr = x == y") == ("expr", "x == y")
