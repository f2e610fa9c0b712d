"""Stock kept per item, in memory."""

STOCK = {}


def add(item, count):
    """Add ``count`` of ``item`` to the stock."""
    STOCK[item] = STOCK.get(item, 0) + count


def remove(item, count):
    """Take ``count`` of ``item`` out of the stock (it may go below zero: nothing checks)."""
    STOCK[item] = STOCK.get(item, 0) - count
