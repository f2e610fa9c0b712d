"""What tasks cost at the price table's rates (``config.prices``), for cost estimates and USD budgets."""

from __future__ import annotations

from ..config.prices import price_of
from ..records import RunHeader, Usage

ROLES = ("worker", "grader")

Billed = tuple[tuple[str | None, int, int], ...]
"""Per role (``ROLES``): its model, and the input and output tokens billed to it."""


def billed(header: RunHeader, usage: dict[str, Usage]) -> Billed:
    """What a task of a run with ``header`` was billed, per role (a role without usage: none)."""
    return tuple(
        (getattr(header, role).model, *((usage[role].input_tokens, usage[role].output_tokens) if role in usage else (0, 0)))
        for role in ROLES
    )


def cost_of(bill: Billed, prices: dict[str, dict[str, float]]) -> float | None:
    """Estimated USD of a ``billed`` task (worker + grader); ``None`` when a model has no price."""
    total = 0.0
    for model, input_tokens, output_tokens in bill:
        price = price_of(model, prices)
        if price is None:
            return None
        total += (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6
    return total
