"""The measured capability table and the article's claims, each cell derived from rows by a printed rule.

Nothing here is typed in: a verdict says which rows decided it, and "not measured" where none exist.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT

DATA = ROOT / "data"
CLAIM_KEYS = ("id", "framework", "claim", "rule")

CAPABILITY_RULES = """\
Rules (over rows with mitigation none; N = trials behind the row; "event" = event-anchored ok trials):
- can abort      = yes if llm_requests_after_stop == 0 and effects_new == 0 in every event trial and no trial
                   hung; "hangs" if some trial hung; else no (k/N event trials where work went on, and
                   where, when that is one or two anchors). effects_new counts what reached the world
                   after the stop: one of several parallel calls sent just before the stop can arrive
                   just after it (parallel_fanout on:effect_received:calendar), so a "no" confined to
                   that anchor is that race, not new work.
- state kept     = yes if resume reached the final answer without asking the model a completed turn again
                   (resume_ok and resume_llm_replays == 0) in every resumed trial; partly if in some; no if
                   in none; "no resume" if the adapter has none.
- can resume     = resume_ok in k of N resumed trials (yes = all, no = none).
- repeats effect = yes if resume_duplicate_effects > 0 in any trial (k/N), else no.
- compensated    = yes if every effect committed after the stop was compensated (effects_leaked == 0 where
                   effects_after_stop > 0); no if none was; "-" if no effect landed after a stop.
- orphans clean  = yes if orphans == 0 in every trial; else no (k/N trials left processes running).
- tokens+ / leaked / lie ms / tax $ = medians over ok trials (tax from data/prices.yaml).
"""


def prices() -> dict[str, float]:
    return yaml.safe_load((DATA / "prices.yaml").read_text())


def cancel_tax(df, table: dict[str, float] | None = None):
    p = table or prices()
    return (df["tokens_after_stop"].fillna(0) / 1000 * p["output_tokens_per_1k"]
            + df["effects_compensated"].fillna(0) * p["compensation"]
            + df["orphan_rss_bytes"].fillna(0) / 1e9 * p["orphan_hours"] * p["orphan_gb_hour"])


def _yes_no(k: int, n: int) -> str:
    if n == 0:
        return "-"
    return "yes" if k == n else ("no" if k == 0 else f"partly ({k}/{n})")


def capability_row(g) -> dict[str, Any]:
    ok = g[g["status"] == "ok"]
    ev = ok[ok["offset_kind"] == "event"]
    hung = int((g["status"] == "hung").sum())
    on = ev[(ev["llm_requests_after_stop"] > 0) | (ev["effects_new"] > 0)]
    went_on = len(on)
    where = sorted({f"{s} {o}" for s, o in on[["scenario", "offset"]].values})
    if hung:
        abort = f"hangs ({hung}/{len(g)})"
    elif len(ev) == 0:
        abort = "-"
    elif went_on == 0:
        abort = "yes"
    else:  # name the anchors when there are few: a reader can then tell a race from a habit
        abort = f"no ({went_on}/{len(ev)}" + (f": {'; '.join(where)})" if len(where) <= 2 else ")")
    resumed = ok[ok["resume_ok"].notna()]
    if len(resumed) == 0:
        state = resume = "no resume"
    else:
        clean = int((resumed["resume_ok"].astype(bool) & (resumed["resume_llm_replays"] == 0)).sum())
        state = _yes_no(clean, len(resumed))
        resume = _yes_no(int(resumed["resume_ok"].astype(bool).sum()), len(resumed))
    dups = int((ok["resume_duplicate_effects"] > 0).sum())
    landed = ok[ok["effects_after_stop"] > 0]
    comp = _yes_no(int((landed["effects_leaked"] == 0).sum()), len(landed))
    orphaned = int((ok["orphans"] > 0).sum())
    return {
        "can abort": abort, "state kept": state, "can resume": resume,
        "repeats effect": "no" if dups == 0 else f"yes ({dups}/{len(ok)})",
        "compensated": comp, "orphans clean": "yes" if orphaned == 0 else f"no ({orphaned}/{len(ok)})",
    }


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
    (its variant adapters too: autogen-load-state measures AutoGen)."""
    fw = claim["framework"]
    rows = df if fw == "*" else df[df["framework"] == fw]
    base = rows[(rows["mitigation"] == "none") & (rows["status"] == "ok")]
    if claim.get("mode"):
        base = base[base["mode"] == claim["mode"]]
    rule = claim["rule"]
    if rule == "saga_closes_leak":
        return _saga(rows[rows["status"] == "ok"])
    if base.empty:
        return "not measured", "no ok rows for this framework" + (f" and mode {claim['mode']}" if claim.get("mode")
                                                                    else "")
    n = len(base)
    if rule == "keeps_running":
        on = base[(base["llm_requests_after_stop"] > 0) | (base["effects_new"] > 0) | (base["tokens_after_stop"] > 1)
                  | (base["threads_left"] > 0)]
        verdict = "confirmed" if len(on) == n else ("refuted" if len(on) == 0 else "partly")
        return verdict, (f"{len(on)}/{n} trials kept generating tokens, asking the model, sending new effects or "
                         "running threads after the stop")
    if rule == "resumes_cleanly":
        resumed = base[base["resume_ok"].notna()]
        good = resumed[resumed["resume_ok"].astype(bool) & (resumed["resume_duplicate_effects"] == 0)]
        verdict = ("not measured" if resumed.empty else "confirmed" if len(good) == len(resumed)
                   else "refuted" if len(good) == 0 else "partly")
        by_mode = ", ".join(f"{m} {int(((g['resume_ok'] == True) & (g['resume_duplicate_effects'] == 0)).sum())}"  # noqa: E712
                            f"/{len(g)}" for m, g in resumed.groupby("mode"))
        return verdict, f"resume reached the end without a repeated effect in: {by_mode}"
    if rule == "no_abort_and_no_resume":
        ev = base[base["offset_kind"] == "event"]
        aborting = [m for m, g in ev.groupby("mode")
                    if ((g["llm_requests_after_stop"] == 0) & (g["effects_new"] == 0)).all()]
        resumed = base[base["resume_ok"].notna()]
        kept = int(resumed["resume_ok"].astype(bool).sum()) if not resumed.empty else 0
        no_abort = not aborting
        dropped = kept == 0
        verdict = "confirmed" if no_abort and dropped else "refuted" if not no_abort and not dropped else "partly"
        return verdict, (f"modes that aborted at every event anchor: {', '.join(aborting) or 'none'}; "
                         f"resume reached the end in {kept}/{len(resumed)} trials")
    if rule == "orphans_seen":
        orph = base[base["orphans"] > 0]
        who = ", ".join(sorted({f"{a}/{m}/{t}" for a, m, t in orph[["adapter", "mode", "tool_style"]].values}))
        verdict = "confirmed" if len(orph) else "refuted"
        return verdict, f"{len(orph)}/{n} trials left processes that had to be reaped" + (f": {who}" if who else "")
    return "unknown rule", rule


def _saga(ok) -> tuple[str, str]:
    none = ok[ok["mitigation"] == "none"]
    saga = ok[ok["mitigation"].isin(["saga", "saga+idempotent"])]
    if saga.empty:
        return "not measured", "no trials with --mitigation saga"
    keys = ["adapter", "mode", "scenario", "offset", "tool_style"]
    leaky = none[none["effects_leaked"] > 0][keys].drop_duplicates()
    merged = leaky.merge(saga, on=keys)
    if merged.empty:
        return "not measured", "no leaking cell was measured with saga"
    closed = merged.groupby(keys)["effects_leaked"].max().eq(0)
    verdict = "confirmed" if closed.all() else ("refuted" if not closed.any() else "partly")
    open_cells = ", ".join("/".join(map(str, k)) for k, v in closed.items() if not v)
    why = ("; each still-leaking row's `saga` and `saga_late` marks name what the saga compensated, and its "
           "ledger shows what committed after them" if open_cells else "")
    return verdict, (f"{int(closed.sum())}/{len(closed)} leaking cells had 0 leaked with saga"
                     + (f"; still leaking: {open_cells}" if open_cells else "") + why)
