"""The one way every output writes a number: rounded half up on its decimal digits.

A float is rounded as the shortest decimal that reads back as it (``repr``), half up: ``0.125`` to
two digits is ``0.13`` and ``2.675`` is ``2.68``, in the summary files, the reports and on the
console alike; ``0.1 + 0.2`` is written ``0.3``, never ``0.30000000000000004``.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

SUMMARY_DIGITS = 6
"""Digits after the point of a fraction, a cost or a mean in the summary files."""


def _decimal(value: float, digits: int) -> Decimal:
    number = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return number.copy_abs() if number.is_zero() else number  # no "-0.0"


def rounded(value: float | None, digits: int = SUMMARY_DIGITS) -> float | None:
    """``value`` rounded to ``digits`` after the point, as a float (None stays None)."""
    return None if value is None else float(_decimal(value, digits))


def fmt_num(value: float | None, digits: int = 2) -> str:
    """``1,234.57``: thousands separated, ``digits`` after the point; ``n/a`` for None."""
    return "n/a" if value is None else f"{_decimal(value, digits):,}"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """``66.7%`` for 2/3; ``-`` for None."""
    return "-" if value is None else f"{_decimal(100 * value, digits)}%"


def fmt_pts(value: float | None) -> str:
    """``+20.0 pts``: a difference of two rates in percentage points; ``-`` for None."""
    if value is None:
        return "-"
    text = fmt_num(100 * value, 1)
    return f"{text if text.startswith('-') else '+' + text} pts"


def fmt_p(value: float | None) -> str:
    """A p-value: ``p = 0.031``, ``p < 0.001``, ``p = 1.0``."""
    if value is None:
        return "-"
    if value < 0.001:
        return "p < 0.001"
    return f"p = {fmt_num(value, 3).rstrip('0').rstrip('.') if value < 1 else '1.0'}"


def fmt_tokens(value: float | None) -> str:
    """``12,345``: a count of tokens (a mean rounded to a whole token); ``n/a`` for None."""
    return fmt_num(value, 0)


def fmt_rate(part: int, whole: int) -> str:
    """``3/4 (75.0%)``: a count of a whole and its share; ``-`` when the whole is 0."""
    return f"{part}/{whole} ({fmt_pct(part / whole)})" if whole else "-"


def fmt_interval(interval: tuple[float, float], unit: Literal["%", "pts", ""] = "%") -> str:
    """A 95% interval: ``95% CI 4.6-69.9%`` of a rate (``%``), ``95% CI -25.2 to 54.6`` of a difference of
    rates in points (``pts``), ``95% CI 0.31 to 0.88`` of any other figure (``""``, say a κ)."""
    low, high = interval
    if unit == "%":
        return f"95% CI {fmt_pct(low)[:-1]}-{fmt_pct(high)}"
    if unit == "pts":
        return f"95% CI {fmt_num(100 * low, 1)} to {fmt_num(100 * high, 1)}"
    return f"95% CI {fmt_num(low)} to {fmt_num(high)}"
