"""The article's claims, checked: each claim (adapters/<folder>/claims.yaml, data/claims.yaml) names a rule, and
its verdict is derived from rows by that rule, with the rows that decided it.

Nothing here is typed in: a verdict says which rows decided it, and "not measured" where none exist. The
trials are read as the capability table reads them (harness/results/capability.py, CAPABILITY_RULES).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT
from harness.results.capability import causes, resumes, stop_broke, went_on
from harness.results.cells import numbers
from harness.results.orphans import orphans_seen
from harness.results.selection import BUTTON, CONDITION, in_main_matrix, is_anchored, is_measured

CLAIM_KEYS = ("id", "framework", "claim", "rule")


def load_claims(root: Path = ROOT) -> list[dict[str, Any]]:
    """The article's claims, in the table's order: each framework's own (`adapters/<folder>/claims.yaml`,
    `framework` defaulting to the folder's name), ordered by their `order` (the article's), then by folder
    and place in the file; then the cross-framework ones of data/claims.yaml (`framework: "*"`)."""
    claims = []
    for path in sorted((root / "adapters").glob("*/claims.yaml")):
        claims += _claims_file(path, framework=path.parent.name.replace("_", "-"))
    claims.sort(key=lambda c: c.get("order", math.inf))  # stable: folder and file order within an order
    return claims + _claims_file(root / "data" / "claims.yaml")


def _claims_file(path: Path, framework: str | None = None) -> list[dict[str, Any]]:
    claims = yaml.safe_load(path.read_text()) or []
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        raise ValueError(f"{path}: expected a list of claims (mappings with {', '.join(CLAIM_KEYS)})")
    if framework:
        claims = [{"framework": framework, **c} for c in claims]
    for i, c in enumerate(claims):
        missing = [k for k in CLAIM_KEYS if k not in c]
        if missing:
            raise ValueError(f"{path}: claim {c.get('id', i)!r}: missing {', '.join(missing)}")
    return claims


def judge(claim: dict[str, Any], df) -> tuple[str, str]:
    """(verdict, the rows that decide it). A framework's rows are those whose `framework` field names it
    (its variant adapters too: autogen-load-state measures AutoGen). Every trial but the skipped counts: one
    that hung or failed did not abort, and says so in the verdict (CAPABILITY_RULES, last paragraph)."""
    fw = claim["framework"]
    rows = df if fw == "*" else df[df["framework"] == fw]
    if claim["rule"] == "orphans_seen":  # over the main matrix and the orphan matrix (harness/results/orphans.py)
        return orphans_seen(rows)
    rows = rows[in_main_matrix(rows) & is_measured(rows)]
    base = rows[rows["mitigation"] == "none"]
    if claim.get("mode"):
        base = base[base["mode"] == claim["mode"]]
    rule = claim["rule"]
    if rule == "saga_closes_leak":
        return _saga(rows)
    if base.empty:
        return "not measured", "no rows for this framework" + (f" and mode {claim['mode']}" if claim.get("mode")
                                                               else "") + " (skipped trials left out)"
    n = len(base)
    broke = stop_broke(base)
    if rule in ("keeps_running", "stops_cleanly", "keeps_working"):  # one predicate, a claim of either polarity
        threads = rule != "keeps_working"  # the run's work only: tokens, model requests, new effects
        going = broke | went_on(base) | (numbers(base, "tokens_after_stop") > 1)
        on = base[going | (numbers(base, "threads_left") > 0)] if threads else base[going]
        kept, none_kept = ("refuted", "confirmed") if rule == "stops_cleanly" else ("confirmed", "refuted")
        verdict = kept if len(on) == n else (none_kept if len(on) == 0 else "partly")
        return verdict, (f"{len(on)}/{n} trials kept generating tokens, asking the model, sending new effects"
                         + (" or running threads" if threads else "") + " after the stop"
                         + (f"; counted among them, as not stopped: {causes(base[broke], True)}" if broke.any()
                            else ""))
    if rule == "resumes_cleanly":
        resumed = resumes(base)
        good = resumed["resume_ok"].eq(True) & (numbers(resumed, "resume_duplicate_effects").fillna(0) == 0)
        verdict = ("not measured" if resumed.empty else "confirmed" if good.all()
                   else "refuted" if not good.any() else "partly")
        by_mode = ", ".join(f"{m} {int(good.loc[g.index].sum())}/{len(g)}" for m, g in resumed.groupby("mode"))
        died = resumed[resumed["resume_ok"].isna()]
        never = base[broke]
        return verdict, (f"resume reached the end without a repeated effect in: {by_mode}"
                         + (f"; not resumed: {causes(died, True)}" if len(died) else "")
                         + (f"; never got to resume: {causes(never, True)}" if len(never) else ""))
    if rule == "no_abort_and_no_resume":
        ev = base[is_anchored(base, "event")]
        not_aborted = broke.loc[ev.index] | went_on(ev)
        aborting = [m for m, g in ev.groupby("mode") if not not_aborted.loc[g.index].any()]
        wrong = [f"{m} {int(broke.loc[g.index].sum())}/{len(g)} ({causes(g[broke.loc[g.index]], True)})"
                 for m, g in ev.groupby("mode") if broke.loc[g.index].any()]
        resumed = resumes(base)
        kept = int(resumed["resume_ok"].eq(True).sum())
        died = resumed[resumed["resume_ok"].isna()]
        no_abort = not aborting
        dropped = kept == 0
        verdict = "confirmed" if no_abort and dropped else "refuted" if not no_abort and not dropped else "partly"
        return verdict, (f"modes that aborted at every event anchor: {', '.join(aborting) or 'none'}; "
                         + (f"event trials that hung or failed (did not abort): {'; '.join(wrong)}; " if wrong else "")
                         + f"resume reached the end in {kept}/{len(resumed)} trials"
                         + (f" (not resumed: {causes(died, True)})" if len(died) else ""))
    return "unknown rule", rule


def _saga(rows) -> tuple[str, str]:
    """Leaking cells (mitigation none) measured again with saga: closed when no saga trial leaked or went wrong
    in or before the stop phase (its saga never ran). Rows of every status but skipped."""
    none = rows[rows["mitigation"] == "none"]
    saga = rows[rows["mitigation"].isin(["saga", "saga+idempotent"])]
    if saga.empty:
        return "not measured", "no trials with --mitigation saga"
    keys = [*BUTTON, *CONDITION]
    leaky = none[numbers(none, "effects_leaked") > 0][keys].drop_duplicates()
    merged = leaky.merge(saga, on=keys)
    if merged.empty:
        return "not measured", "no leaking cell was measured with saga"
    broke = stop_broke(merged)
    still = broke | ~(numbers(merged, "effects_leaked") == 0)
    closed = ~merged.assign(still=still).groupby(keys)["still"].any()
    verdict = "confirmed" if closed.all() else ("refuted" if not closed.any() else "partly")
    open_cells = ", ".join("/".join(map(str, k)) for k, v in closed.items() if not v)
    why = ("; each still-leaking row's `saga` and `saga_late` marks name what the saga compensated, and its "
           "ledger shows what committed after them" if open_cells else "")
    wrong = f"; saga trials that went wrong before the saga ran: {causes(merged[broke], True)}" if broke.any() else ""
    return verdict, (f"{int(closed.sum())}/{len(closed)} leaking cells had 0 leaked with saga"
                     + (f"; still leaking: {open_cells}" if open_cells else "") + why + wrong)
