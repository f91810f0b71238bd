"""The headline: per framework, its best stop button (or the buttons tied for best) and, for each thing a stop can
get wrong, the share of trials it got wrong (k of the N trials where it applies), with its 95% interval.

The shares are the predicates of harness/results/judgement.py, declared there once; this module ranks them.
A button is ranked when it was measured under every condition (scenario x offset x tool style) its framework was:
coverage, never a trial count (a third repetition where the first two disagree must not decide which buttons are
ranked). Each share's rate is read per condition, so repetitions do not weight a button. Two buttons whose shares
differ within the interval (the Newcombe interval of the difference holds 0) are a tie on that share; ties go to the
next share of RANK, and the buttons still tied at the end are the best set.
"""

from __future__ import annotations

from typing import Any

from harness.results.cells import numbers
from harness.results.judgement import PREDICATE, PREDICATES, Share, mask, stop_judged, tied
from harness.results.selection import BUTTON, CONDITION, is_anchored, is_measured

#: the scorecard's columns: every declared predicate
SHARES = PREDICATES
SHARE = PREDICATE
#: the percentile of tokens after the stop a token cell also shows
TOKEN_PERCENTILE = 90
#: the best button: the smallest share of the first, ties (within the interval) to the smaller share of the next, ...
RANK = ("did_not_stop", "went_wrong", "resume_repeat", "resume_refused", "leaked", "tokens")
#: shares that are facts, not faults: they colour no row and rank nothing (what the world decides, what was left
#: to stop, what a cancel reached)
FACTS = ("nothing_to_stop", "in_flight", "in_flight_cancelled")
#: a row is green only when none of its trials did any of these; red when more than RED_SHARE did not stop
CLEAN = tuple(s.key for s in SHARES if s.key not in FACTS)
RED_SHARE = 0.5


def best_rule() -> str:
    """The ranking rule in words, from RANK and the shares' own words."""
    first, *ties = (SHARE[k] for k in RANK)
    return ("best button = among the buttons measured under every condition (scenario x offset x tool style) their "
            "framework was measured under (a variant benched on fewer is listed, not ranked), the one with the "
            f"smallest share of {first.over_words} that {first.counts_words} (\"{first.label}\"), each share the mean "
            "over conditions of the share within each (repetitions do not weight a button); buttons whose shares "
            "differ within the 95% interval (Newcombe's, of the difference) are tied, and ties go to the smaller "
            "share of " + ", then of ".join(f'"{s.label}"' for s in ties)
            + "; the buttons still tied are the best set")


def legend() -> list[tuple[str, str]]:
    """(css class, meaning) of the colours of a cell and of a row."""
    clean = ", ".join(f'"{SHARE[k].label}"' for k in CLEAN)
    return [("zero", "0/N: no trial did it"), ("some", f"some trials did it (at most {RED_SHARE:.0%})"),
            ("most", f"more than {RED_SHARE:.0%} of the trials did it"),
            ("na", "N = 0: does not apply; or a fact, not a fault (" + ", ".join(f'"{SHARE[k].label}"' for k in FACTS)
             + ")"),
            ("good", f"row: no trial {clean} (nothing leaked, nothing repeated on resume)"),
            ("mixed", "row: some trials did one of those"),
            ("bad", f"row: more than {RED_SHARE:.0%} of the judged trials did not stop")]


def tone(k: int, n: int, key: str = "") -> str:
    """The colour class of a k/N cell (legend)."""
    if n == 0 or key in FACTS:
        return "na"
    return "zero" if k == 0 else "most" if k / n > RED_SHARE else "some"


def trial_flags(rows) -> dict[str, tuple[Any, Any]]:
    """share key -> (over, counted): two masks over `rows` (one button, mitigation none, skipped left out).
    The scorecard's k/N are their sums; the button page marks each trial with them, so a cell's link lists
    exactly its k trials."""
    out = {}
    for s in SHARES:
        over = mask(s.over(rows), rows)
        out[s.key] = (over, over & mask(s.counts(rows), rows))
    return out


def conditions(rows) -> set[tuple]:
    """The conditions (scenario x offset x tool style) the rows were measured under, skipped trials left out."""
    measured = rows[is_measured(rows)]
    return set(map(tuple, measured[list(CONDITION)].astype(str).values))


def button(g, verdicts: dict[str, Any], covered: set[tuple]) -> dict[str, Any]:
    """One adapter x mode (mitigation none, skipped trials left out) with its capability verdicts: each share as k/N
    with its rate and interval, the tokens' percentile, and its verdicts; `covered`: its conditions."""
    from harness.results.capability import text

    measured = {s.key: s.share(g) for s in SHARES}
    shares = {key: {**v.as_dict(), "tone": tone(v.k, v.n, key)} for key, v in measured.items()}
    tokens = numbers(g, "tokens_after_stop").dropna()
    did = measured["did_not_stop"]
    return {
        "adapter": g["adapter"].iloc[0], "mode": g["mode"].iloc[0], "trials": len(g),
        "judged_trials": did.n, "did_not_stop": did.k, "did_not_stop_rate": did.rate,
        "conditions": len(covered), "time_judged": int((stop_judged(g) & is_anchored(g, "time")).sum()),
        "shares": shares, "measured": measured,
        "tokens_p90": None if tokens.empty else float(tokens.quantile(TOKEN_PERCENTILE / 100,
                                                                     interpolation="higher")),
        "can_abort": text(verdicts["can abort"]), "can_resume": text(verdicts["can resume"]),
        "row": ("good" if all(shares[k]["k"] == 0 for k in CLEAN) else
                "bad" if did.n and did.rate > RED_SHARE else "mixed"),
    }


def _rate(b: dict[str, Any], key: str) -> float:
    s: Share = b["measured"][key]
    return s.rate if s.n else 0.0


def best_set(ranked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The buttons tied for best: RANK share by share, the buttons within the interval of the smallest stay."""
    tied_best = list(ranked)
    for key in RANK:
        if len(tied_best) == 1:
            break
        lead = min(tied_best, key=lambda b: (_rate(b, key), b["adapter"], b["mode"]))
        tied_best = [b for b in tied_best if tied(b["measured"][key], lead["measured"][key])]
    return sorted(tied_best, key=lambda b: (tuple(_rate(b, k) for k in RANK), b["adapter"], b["mode"]))


def base_rows(df):
    """The trials the scorecard reads: mitigation none, skipped left out."""
    return df[(df["mitigation"] == "none") & is_measured(df)]


def coverage(groups: dict[tuple[str, str], Any]) -> dict[tuple[str, str], set[tuple]]:
    """(adapter, mode) -> rows, as (adapter, mode) -> the conditions those rows were measured under."""
    return {key: conditions(rows) for key, rows in groups.items()}


def ranked(covered: dict[tuple[str, str], set[tuple]]) -> set[tuple[str, str]]:
    """Of one framework's buttons (their `coverage`), those measured under every condition the framework was (when
    none was, those measured under the most)."""
    matrix = set().union(*covered.values())
    whole = {key for key, c in covered.items() if c >= matrix}
    if not whole:
        most = max(len(c) for c in covered.values())
        whole = {key for key, c in covered.items() if len(c) == most}
    return whole


def scorecard(df, caps: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """[{framework, best, best_set, buttons: [...]}], frameworks by name; each framework's buttons: the best set
    first, then the other ranked ones, then the variants measured under fewer conditions. `caps`: the report's
    capability verdicts (harness/results/capability.py capability_rows)."""
    base = base_rows(df)
    out = []
    for framework, g in base.groupby("framework", sort=True):
        groups = dict(iter(g.groupby(list(BUTTON), sort=True)))
        covered = coverage(groups)
        matrix = set().union(*covered.values())
        buttons = [button(m, caps[key], covered[key]) for key, m in groups.items()]
        keys = ranked(covered)
        whole = [b for b in buttons if (b["adapter"], b["mode"]) in keys]
        best = best_set(whole)
        whole_ids, best_ids = {id(b) for b in whole}, {id(b) for b in best}
        for b in buttons:
            b["ranked"] = id(b) in whole_ids
            b["best"] = id(b) in best_ids
        ranked_key = {id(b): i for i, b in enumerate(best)}
        buttons.sort(key=lambda b: (not b["best"], not b["ranked"], ranked_key.get(id(b), 0),
                                    tuple(_rate(b, k) for k in RANK), b["adapter"], b["mode"]))
        out.append({"framework": framework, "best": buttons[0], "best_set": [(b["adapter"], b["mode"]) for b in best],
                    "conditions": len(matrix), "buttons": buttons, "versions": _versions(g)})
    return out


def public(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scorecard as summary.json stores it: every value data (the Share objects as their dicts)."""
    def clean(b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if k != "measured"}

    return [{**c, "best": clean(c["best"]), "best_set": [list(x) for x in c["best_set"]],
             "buttons": [clean(b) for b in c["buttons"]]} for c in cards]


def _versions(g) -> str:
    versions = g["versions"].dropna()
    latest = versions.iloc[-1] if len(versions) else {}
    return ", ".join(f"{k} {v}" for k, v in (latest or {}).items())
