"""The same buttons in other settings: the capability table per provider, and what a stop costs under each billing
profile. The headline tables read a framework at home (harness/results/settings.py); these read the rest."""

from __future__ import annotations

from typing import Any

from harness.billing import DEFAULT_PROFILE, PROFILES
from harness.results.capability import capability_rows, texts
from harness.results.cells import cells
from harness.results.scorecard import scorecard
from harness.results.selection import BUTTON, CONDITION, in_main_matrix, is_anchored, is_ok
from harness.results.settings import billing_of, own_billing, provider_of

#: the measured columns of the per-provider table
PER_PROVIDER = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked")


def _main(rows):
    return rows[in_main_matrix(rows) & (rows["mitigation"] == "none")]


def per_provider(full, billing: dict[str, str]) -> Any:
    """Every button on every provider it was measured on (the scenario's own billing): its capability verdicts,
    its medians, and whether it is in its framework's best set on that provider. Empty when one provider was."""
    import pandas as pd

    rows = _main(full[own_billing(full, billing)])
    providers = provider_of(rows)
    if rows.empty or providers.nunique() < 2:
        return pd.DataFrame()
    out = []
    for provider, g in rows.groupby(providers, sort=True):
        caps = capability_rows(g)
        best = {key for card in scorecard(g, caps) for key in card["best_set"]}
        for (adapter, mode), b in g.groupby(list(BUTTON), sort=True):
            out.append({"provider": provider, "adapter": adapter, "mode": mode, "N": len(b),
                        "best": "best" if (adapter, mode) in best else "",
                        **texts(caps[(adapter, mode)]), **cells(b[is_ok(b)], PER_PROVIDER)})
    return pd.DataFrame(out)


#: a billing table cell where the profile was not played
NOT_MEASURED_COST = "not measured"


def _tokens(rows) -> str:
    """`median [min..max] (N)` of tokens billed after the stop over ok trials; NOT_MEASURED_COST when none."""
    t = rows.loc[is_ok(rows), "tokens_after_stop"].dropna()
    if t.empty:
        return NOT_MEASURED_COST
    return f"{t.median():g} [{t.min():g}..{t.max():g}] ({len(t)})"


def billing_costs(full, cards: list[dict[str, Any]]) -> Any:
    """Per best button of the headline scorecard and per provider it was measured on: tokens billed after the stop
    under each billing profile, median [min..max] (ok trials), over the event-anchored conditions where the profile
    other than the default was played (both columns over the same conditions); without such rows, the default's
    over every event anchor and the others `not measured`."""
    import pandas as pd

    rows = _main(full[is_anchored(full, "event")])
    out = []
    for card in cards:
        for adapter, mode in card["best_set"]:
            button = rows[(rows["adapter"] == adapter) & (rows["mode"] == mode)]
            for provider, g in button.groupby(provider_of(button), sort=True):
                profiles = billing_of(g)
                played = g[profiles != DEFAULT_PROFILE.name]
                base = g[profiles == DEFAULT_PROFILE.name]
                if not played.empty:
                    measured = set(map(tuple, played[list(CONDITION)].astype(str).values))
                    keep = [tuple(c) in measured for c in base[list(CONDITION)].astype(str).values]
                    base = base[keep]
                line = {"framework": card["framework"], "button": f"{adapter}/{mode}", "provider": provider,
                        "conditions": len(set(map(tuple, (played if not played.empty else base)[list(CONDITION)]
                                                  .astype(str).values)))}
                line[DEFAULT_PROFILE.name] = _tokens(base)
                for name in PROFILES:
                    if name != DEFAULT_PROFILE.name:
                        line[name] = _tokens(played[billing_of(played) == name])
                out.append(line)
    return pd.DataFrame(out)
