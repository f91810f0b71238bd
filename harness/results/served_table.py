"""The same button, served: each button's served rows beside its in-process rows of the same conditions, and what
the serving path changes beyond the noise.

A served trial (harness/trial/serve/) presses the same framework button as the in-process one, from a server
reacting to a client's stop. The comparison reads the judgement's predicates (harness/results/judgement.py): for
each, the served share and the in-process share over the same conditions (scenario x offset x tool style, on the
same provider and billing); a difference whose interval holds 0 is a tie. With one condition no difference can
be called (the interval is taken over conditions): the served matrix sweeps more than one
(harness/bench_plan.py SERVED_MATRIX).
"""

from __future__ import annotations

from typing import Any

from harness.results.cells import cells
from harness.results.judgement import PREDICATE, difference_interval, tied
from harness.results.selection import BUTTON, CONDITION, in_main_matrix, is_ok
from harness.results.settings import billing_of, provider_of
from harness.vocabulary import IN_PROCESS

#: what the served stop is compared on (the judgement's predicates, in this order)
COMPARED = ("did_not_stop", "tokens", "asked_again", "new_effect", "leaked", "went_wrong")
#: the medians shown beside the shares
MEASURED = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "served_stop_seen_ms")
#: the word for a path none of whose shares differs from the in-process one's beyond the noise
TIE = "tie"


def _setting(rows) -> Any:
    """Each row's conditions, provider and billing profile: the keys a served row is matched on."""
    return [tuple(r) for r in rows[list(CONDITION)].astype(str).values], provider_of(rows), billing_of(rows)


def against(served, in_process) -> dict[str, str]:
    """{predicate key: `more` | `fewer`} for each compared predicate whose served share differs from the
    in-process one beyond the noise (the 95% interval of the difference excludes 0); ties are left out."""
    out = {}
    for key in COMPARED:
        a, b = PREDICATE[key].share(served), PREDICATE[key].share(in_process)
        if not tied(a, b):
            out[key] = "more" if difference_interval(a, b)[0] > 0 else "fewer"
    return out


def against_text(moved: dict[str, str]) -> str:
    """`tie`, or `more: did not stop; fewer: hung or failed` in the predicates' column words."""
    if not moved:
        return TIE
    parts = []
    for word in ("more", "fewer"):
        labels = [PREDICATE[k].label for k in COMPARED if moved.get(k) == word]
        if labels:
            parts.append(f"{word}: {', '.join(labels)}")
    return "; ".join(parts)


def served_table(full) -> Any:
    """Per button with served rows and per path: its trials (N), ok, the compared shares (k/N), medians over ok
    trials, and `against in-process`: the predicates whose share differs from the in-process rows of the same
    conditions beyond the noise (`tie` when none). The in-process line of each button is over those same
    conditions. Empty when no row was served."""
    import pandas as pd

    if "serve_path" not in full:
        return pd.DataFrame()
    path = full["serve_path"].fillna(IN_PROCESS).astype(str)
    served = full[path != IN_PROCESS]
    if served.empty:
        return pd.DataFrame()
    base = full[in_main_matrix(full) & (full["mitigation"] == "none")]
    out = []
    for (adapter, mode), s in served.groupby(list(BUTTON), sort=True):
        conditions, providers, billing = _setting(s)
        wanted = set(zip(conditions, providers, billing, strict=True))
        b = base[(base["adapter"] == adapter) & (base["mode"] == mode)]
        here = list(zip(*_setting(b), strict=True)) if not b.empty else []
        ours = b[[key in wanted for key in here]]
        for name, rows in [(IN_PROCESS, ours), *s.groupby(path[s.index], sort=True)]:
            line = {"adapter": adapter, "mode": mode, "serve_path": name,
                    "client_stop": "" if name == IN_PROCESS else str(rows["client_stop"].iloc[0]),
                    "N": len(rows), "ok": f"{int(is_ok(rows).sum())}/{len(rows)}"}
            for key in COMPARED:
                share = PREDICATE[key].share(rows)
                line[PREDICATE[key].label] = f"{share.k}/{share.n}"
            line.update(cells(rows[is_ok(rows)], MEASURED) if is_ok(rows).any() else {})
            line["server's run ended"] = ("" if name == IN_PROCESS else
                                          f"{int(rows['served_run_ended'].eq(True).sum())}/{len(rows)}")
            line["against in-process"] = "" if name == IN_PROCESS else against_text(against(rows, ours))
            out.append(line)
    return pd.DataFrame(out)
