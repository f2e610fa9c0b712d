"""URL slugs."""


def slugify(title):
    """The title in lower case, words joined by single hyphens."""
    return title.lower().replace(" ", "-")
