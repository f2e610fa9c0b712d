from slug import slugify


def test_tabs_and_newlines():
    assert slugify("Hello\tbig\nWorld") == "hello-big-world"


def test_one_word():
    assert slugify("Hello") == "hello"
