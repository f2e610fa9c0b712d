"""Word counts."""


def count_words(text):
    """How many words ``text`` holds, whatever whitespace stands between them."""
    return len(text.split(" "))
