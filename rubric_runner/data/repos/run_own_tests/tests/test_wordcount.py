from wordcount import count_words


def test_one_line():
    assert count_words("one two three") == 3


def test_lines_and_runs_of_spaces():
    assert count_words("one  two\nthree\tfour\n") == 4
