"""The same job under other world rules, side by side: each scenario that names the one it is a variant of
(`variant_of`, e.g. q3_report_honours_disconnect: services that drop an effect whose client has gone), per stop
button, at the moments both were stopped at (an email in flight).

It shows what a stop that cancels its tool's request saves where the service honours a disconnect, and what it
cannot save where the service commits what it received (as a mail API does). Every count is a share of
harness/results/judgement.py over the rows the scorecard reads (mitigation none, skipped and nothing-to-stop left
out).
"""

from __future__ import annotations

from typing import Any

from harness.results.judgement import PREDICATE
from harness.results.scorecard import base_rows
from harness.results.selection import BUTTON
from harness.scenario import Scenario


def _cell(rows, key: str) -> str:
    s = PREDICATE[key].share(rows)
    return f"{s.k}/{s.n}" if s.n else "-"


def variant_table(df, scenarios: dict[str, Scenario]):
    """One line per button x variant: "effect in flight landed" under the base scenario's rules and under the
    variant's, and "in-flight call cancelled" in the variant (the trials whose cancel reached the tool), over the
    offsets and tool styles both were measured at."""
    import pandas as pd

    base = base_rows(df)
    out: list[dict[str, Any]] = []
    for name, scenario in sorted(scenarios.items()):
        if not scenario.variant_of:
            continue
        variant = base[base["scenario"] == name]
        original = base[base["scenario"] == scenario.variant_of]
        shared = set(map(tuple, variant[["offset", "tool_style"]].values)) & set(
            map(tuple, original[["offset", "tool_style"]].values))
        for (adapter, mode), v in variant.groupby(list(BUTTON), sort=True):
            o = original[(original["adapter"] == adapter) & (original["mode"] == mode)]
            v = v[[k in shared for k in map(tuple, v[["offset", "tool_style"]].values)]]
            o = o[[k in shared for k in map(tuple, o[["offset", "tool_style"]].values)]]
            if v.empty or o.empty:
                continue
            out.append({"adapter": adapter, "mode": mode, "variant": name,
                        f"landed ({scenario.variant_of})": _cell(o, "in_flight"),
                        f"landed ({name})": _cell(v, "in_flight"),
                        "cancel reached the tool": _cell(v, "in_flight_cancelled")})
    return pd.DataFrame(out)
