"""Order and invoice totals."""


def order_total(prices, percent):
    """The sum of ``prices`` less ``percent`` per cent, to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError(f"a discount is 0-100 per cent, not {percent}")
    return round(sum(prices) * (100 - percent) / 100, 2)


def invoice_total(lines, percent):
    """The sum of each ``(price, count)`` line less ``percent`` per cent, to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError(f"a discount is 0-100 per cent, not {percent}")
    return round(sum(price * count for price, count in lines) * (100 - percent) / 100, 2)
