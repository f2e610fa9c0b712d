"""The price table: USD per 1M input and output tokens by model, for cost estimates."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..paths import CONF_DIR
from ..records import RunHeader, Usage

PRICES_FILE = CONF_DIR / "prices.yaml"
ROLES = ("worker", "grader")


class PriceError(ValueError):
    """The price table is missing or malformed."""


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """USD per 1M input/output tokens by model, from ``path`` or conf/prices.yaml."""
    path = Path(path) if path else PRICES_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise PriceError(f"price table {path} cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise PriceError(f"price table {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PriceError(f"price table {path} must map model names to {{input, output}}")
    for model, price in data.items():
        if not (isinstance(price, dict) and all(isinstance(price.get(k), (int, float)) for k in ("input", "output"))):
            raise PriceError(f"price table {path}: {model} needs numeric input and output (USD per 1M tokens)")
    return data


def price_of(model: str | None, prices: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """The model's price: by ``provider:model-id``, else by the bare model id."""
    if not model:
        return None
    return prices.get(model) or prices.get(model.partition(":")[2])


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
