"""What a stop costs after it was pressed (the cancel tax), priced by data/prices.yaml."""

from __future__ import annotations

from typing import Any

import yaml

from harness.frameworks import ROOT
from harness.results.cells import numbers

PRICES = ROOT / "data" / "prices.yaml"


def prices() -> dict[str, Any]:
    return yaml.safe_load(PRICES.read_text())


def leak_price(row: dict[str, Any], table: dict[str, float]) -> float:
    """The leaked effects of one row, priced: by kind when every effect after the stop leaked (the row's
    `effects_after_stop_by_kind` then counts exactly the leaked ones), else each at the default price."""
    leaked = row.get("effects_leaked")
    if not isinstance(leaked, (int, float)) or leaked != leaked or leaked <= 0:
        return 0.0
    by_kind = row.get("effects_after_stop_by_kind")
    if isinstance(by_kind, dict) and sum(by_kind.values()) == leaked == row.get("effects_after_stop"):
        return float(sum(n * table.get(kind, table["default"]) for kind, n in by_kind.items()))
    return float(leaked * table["default"])


def cancel_tax(df, table: dict[str, Any] | None = None):
    """Per row: tokens after the stop, compensations, orphan memory x time and leaked effects, in dollars (the
    schema's `cancel_tax_usd`, derived when tables are made, never stored)."""
    import pandas as pd

    p = table or prices()
    cols = [c for c in ("effects_leaked", "effects_after_stop", "effects_after_stop_by_kind") if c in df]
    leaks = pd.Series([leak_price(r, p["leaked_effect"]) for r in df[cols].to_dict("records")], index=df.index,
                      dtype=float)
    return (numbers(df, "tokens_after_stop").fillna(0) / 1000 * p["output_tokens_per_1k"]
            + numbers(df, "effects_compensated").fillna(0) * p["compensation"]
            + numbers(df, "orphan_rss_bytes").fillna(0) / 1e9 * p["orphan_hours"] * p["orphan_gb_hour"]
            + leaks)
