"""Which rows are a framework's headline, and the settings measured beside it.

A framework is judged where its users run it: on its home provider (the first it declares in framework.toml,
harness/providers.py), under the billing its scenario declares (harness/billing.py). Rows of another provider, or
of a billing profile a run played in place of the scenario's (`stopbench run --billing`), are the same buttons in
another setting: every headline table leaves them out, and the providers and billing tables read them. A row
written before providers existed reads as openai; one of a framework no folder declares, as at home on openai.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.billing import DEFAULT_PROFILE
from harness.frameworks import ROOT, discover
from harness.providers import DEFAULT_PROVIDER
from harness.scenario import Scenario

#: the fields that set where a button was measured, beside the trial's conditions
SETTING = ("provider", "billing_profile")


def home_providers(root: Path = ROOT) -> dict[str, str]:
    """framework name -> its home provider (the first it declares)."""
    return {f.name: f.adapter.providers[0] for f in discover(root)}


def scenario_billing(scenarios: dict[str, Scenario]) -> dict[str, str]:
    """scenario name -> the billing profile it declares."""
    return {name: s.billing.name for name, s in scenarios.items()}


def _column(rows: Any, name: str, default: str) -> Any:
    import pandas as pd

    return rows[name].fillna(default) if name in rows else pd.Series(default, index=rows.index, dtype=object)


def provider_of(rows: Any) -> Any:
    """The `provider` column, rows written before it existed as the default."""
    return _column(rows, "provider", DEFAULT_PROVIDER)


def billing_of(rows: Any) -> Any:
    """The `billing_profile` column, rows written before it existed as the default."""
    return _column(rows, "billing_profile", DEFAULT_PROFILE.name)


def at_home(rows: Any, homes: dict[str, str]) -> Any:
    """A mask: rows measured on their framework's home provider."""
    home = rows["framework"].map(homes).fillna(DEFAULT_PROVIDER)
    return provider_of(rows) == home


def own_billing(rows: Any, billing: dict[str, str]) -> Any:
    """A mask: rows measured under the billing profile their scenario declares (a scenario no file declares any
    more: the default's)."""
    declared = rows["scenario"].map(billing).fillna(DEFAULT_PROFILE.name)
    return billing_of(rows) == declared


def headline(rows: Any, homes: dict[str, str], billing: dict[str, str]) -> Any:
    """A mask: the rows every headline table reads (home provider, the scenario's own billing)."""
    return at_home(rows, homes) & own_billing(rows, billing)


def at_home_rows(rows: Any) -> Any:
    """Of `rows` (a DataFrame), those every headline table reads, by this checkout's declarations."""
    from harness.scenario import load_scenarios

    if rows.empty:
        return rows
    return rows[headline(rows, home_providers(), scenario_billing(load_scenarios()))]
