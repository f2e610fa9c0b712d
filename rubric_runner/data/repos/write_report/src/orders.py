"""Orders take items out of the stock."""

from inventory import remove


def place(order):
    """Remove each line's count from the stock; the order is a list of (item, count)."""
    for item, count in order:
        remove(item, count)
