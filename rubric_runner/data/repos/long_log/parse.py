"""Parse "key=value" lines."""


def parse_line(line):
    """The line's key and value, both stripped."""
    key, value = line.split("=")
    return key.strip(), value.strip()
