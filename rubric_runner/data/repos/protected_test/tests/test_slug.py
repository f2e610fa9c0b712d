from slug import slugify


def test_simple():
    assert slugify("Hello World") == "hello-world"


def test_extra_spaces():
    assert slugify("  Hello   World ") == "hello-world"
