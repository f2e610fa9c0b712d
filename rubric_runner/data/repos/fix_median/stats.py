"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def median(values):
    """The middle value of a non-empty list (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
