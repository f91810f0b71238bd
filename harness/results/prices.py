"""What a stop costs after it was pressed (the cancel tax), priced by data/prices.yaml."""

from __future__ import annotations

import yaml

from harness.frameworks import ROOT
from harness.results.cells import numbers

PRICES = ROOT / "data" / "prices.yaml"


def prices() -> dict[str, float]:
    return yaml.safe_load(PRICES.read_text())


def cancel_tax(df, table: dict[str, float] | None = None):
    """Per row: tokens after the stop, compensations and orphan memory x time, in dollars (the schema's
    `cancel_tax_usd`, derived when tables are made, never stored)."""
    p = table or prices()
    return (numbers(df, "tokens_after_stop").fillna(0) / 1000 * p["output_tokens_per_1k"]
            + numbers(df, "effects_compensated").fillna(0) * p["compensation"]
            + numbers(df, "orphan_rss_bytes").fillna(0) / 1e9 * p["orphan_hours"] * p["orphan_gb_hour"])
