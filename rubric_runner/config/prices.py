"""The price table: USD per 1M input and output tokens by model (``conf/prices.yaml``, or ``sweep.prices``)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..paths import CONF_DIR

PRICES_FILE = CONF_DIR / "prices.yaml"


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
