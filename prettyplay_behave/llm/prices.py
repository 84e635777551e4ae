"""What a run's tokens cost: a price per million input and output tokens for each model.

A price comes from the settings ``price_per_mtok_input`` and ``price_per_mtok_output`` (for
every model of the run), else from :data:`KNOWN_PRICES` below. A model with neither is unpriced:
its tokens are shown without a cost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import RunConfig

# US dollars per million tokens (input, output): OpenAI's standard-tier list prices of
# Chat Completions, without the discounts of cached input or the Batch API. Taken 2026-12-01;
# prices change, so the settings override them. A dated snapshot name (gpt-4o-2024-08-06) has
# its undated model's price unless it is listed itself.
PRICES_TAKEN = "2026-12-01"
KNOWN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Price:
    """US dollars per million input (prompt) and output (completion) tokens, and where the
    figures came from."""

    input: float
    output: float
    source: str  # "settings", "table" or "settings and table"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def known_price(model: str) -> tuple[float, float] | None:
    """The table's price of ``model``: its name in any case, with or without a provider
    prefix (``openai/gpt-4o``) or a snapshot date (``gpt-4o-2024-08-06``)."""
    name = model.strip().lower().rpartition("/")[2]
    return KNOWN_PRICES.get(name) or KNOWN_PRICES.get(_SNAPSHOT.sub("", name))


def price_of(model: str, config: RunConfig) -> Price | None:
    """The price of ``model`` in this run: each setting given overrides its half of the
    table's price; None when a half is known from neither."""
    table = known_price(model)
    given = (config.price_per_mtok_input, config.price_per_mtok_output)
    halves = [g if g is not None else (table[n] if table else None) for n, g in enumerate(given)]
    if halves[0] is None or halves[1] is None:
        return None
    if given == (None, None):
        source = "table"
    else:
        source = "settings" if None not in given or table is None else "settings and table"
    return Price(float(halves[0]), float(halves[1]), source)


def format_cost(dollars: float) -> str:
    """``$0.0123``; cents for a dollar and more, ``<$0.0001`` for a trace, ``$0`` for nothing."""
    if dollars == 0:
        return "$0"
    if dollars < 0.0001:
        return "<$0.0001"
    if dollars < 1:
        return f"${dollars:.4f}"
    return f"${dollars:,.2f}"
