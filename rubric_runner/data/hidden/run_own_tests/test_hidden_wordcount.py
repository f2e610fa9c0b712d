from wordcount import count_words


def test_blank_text_has_no_words():
    assert count_words("") == 0
    assert count_words(" \n\t") == 0


def test_padded_text():
    assert count_words("  padded  ") == 1
