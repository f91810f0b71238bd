"""The measured capability table and the article's claims, each cell derived from rows by a printed rule.

Nothing here is typed in: a verdict says which rows decided it, and "not measured" where none exist.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT

DATA = ROOT / "data"
CLAIM_KEYS = ("id", "framework", "claim", "rule")

CAPABILITY_RULES = """\
Rules (over rows with mitigation none; N = trials behind the row). Skipped trials (the job ended before the
stop offset, or the mode cannot run that tool style) are left out of every cell; n = the trials that are not.
Every other trial counts, whatever its status. One that hung, failed, ran away (or ended in any other non-ok
status) in or before the stop phase - its reason names a step other than resume, settle_resume or close, or
none - did not stop the run, whatever it measured before; one that went wrong only in one of those later
steps is read by what it measured.
- can abort      = yes if all E event-anchored trials aborted and no trial hung; a trial aborted if it did not
                   go wrong in or before the stop phase and llm_requests_after_stop == 0 and effects_new == 0.
                   no (k/E: why) if k of the E did not abort: why = how many hung, failed, ... and in
                   which step (e.g. "42 hung in stop, 27 failed in stop"), then how many went on and where
                   (the anchors, when one or two; where alone when no trial hung or failed); "hangs (h/n)" when
                   h of the n trials hung (any offset, any step): alone when all E aborted, else after the "no".
                   effects_new counts calls the harness's tools sent after the stop (by their send
                   time, not their arrival: a parallel call sent just before the stop is in flight).
- state kept     = over the resumed trials: those whose resume returned (resume_ok not null, whatever the
                   trial's status) and those that hung or failed in resume (not resumed, not clean; named:
                   "(k/n: 1 hung in resume)"): yes if resume reached the final answer without asking the model
                   a completed turn again (resume_ok and resume_llm_replays == 0) in every one; partly if in
                   some; no if in none; "no resume" if the adapter has none; "-" if no trial got to a resume.
- can resume     = resume_ok in k of those n resumed trials (yes = all, no = none).
- repeats effect = yes if resume_duplicate_effects > 0 (an effect of before the resume that the resume
                   committed again) in any trial, k/n of the trials that started a resume; else no. A retry
                   within one phase (retry_duplicate_effects: the agent called a tool again) is not counted.
- compensated    = over every trial, hung and failed too (a leak is a leak): yes if every effect committed
                   after the stop was compensated (effects_leaked == 0 where effects_after_stop > 0); no if
                   none was; partly (k/n) if some; "-" if no effect landed after a stop.
- orphans clean  = yes if orphans == 0 in every trial; else no (k/n trials left processes running).
- tokens+ / leaked / lie ms / tax $ = medians over ok trials (tax from data/prices.yaml).
Claims are judged over the same trials, read the same way, their reasons named in the verdict: a trial that
went wrong in or before the stop phase kept running (keeps_running; stops_cleanly is its opposite claim, over
the same trials: confirmed when none kept running; keeps_working reads the run's work alone - tokens, model
requests, new effects - for a claim about the run, not about threads the app keeps) and did not abort at its anchor
(no_abort_and_no_resume: a mode aborts only if every event trial of it aborted); one that hung or failed in
resume did not resume (resumes_cleanly, no_abort_and_no_resume); a saga cell closes its leak only if every
saga trial of it has effects_leaked == 0 and none went wrong in or before the stop phase (saga_closes_leak).
"""


def prices() -> dict[str, float]:
    return yaml.safe_load((DATA / "prices.yaml").read_text())


def cancel_tax(df, table: dict[str, float] | None = None):
    p = table or prices()
    return (_num(df, "tokens_after_stop").fillna(0) / 1000 * p["output_tokens_per_1k"]
            + _num(df, "effects_compensated").fillna(0) * p["compensation"]
            + _num(df, "orphan_rss_bytes").fillna(0) / 1e9 * p["orphan_hours"] * p["orphan_gb_hour"])


#: the trial steps after the stop phase: a trial that went wrong only there had its stop measured in full
AFTER_STOP_STEPS = frozenset({"resume", "settle_resume", "close"})
# the step in a reason (harness/results/metrics.py `status` writes them): `'stop' overran 5s`,
# `... during 'stop'`, `'settle_resume': the run was not quiet ...` (runaway), `stop: Error ...`
_STEP = re.compile(r"^'(\w+)' overran|during '(\w+)'|^'(\w+)': |\('(\w+)'[;)]|^(\w+): ")


def _step(reason: Any) -> str | None:
    """The trial step a non-ok row's reason names, or None (a crash, an exit, an unknown form)."""
    m = _STEP.search(reason) if isinstance(reason, str) else None
    return next((s for s in m.groups() if s), None) if m else None


def _num(df, name: str):
    """A column as numbers, None as NaN (NaN everywhere when absent): an all-None column is not numeric
    otherwise, and hand-written or older rows may lack a field."""
    import pandas as pd

    if name not in df:
        return pd.Series(float("nan"), index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def _steps(df):
    import pandas as pd

    return df["reason"].map(_step) if "reason" in df else pd.Series(None, index=df.index, dtype=object)


def _not_ok(df):
    return (df["status"] != "ok") & (df["status"] != "skipped")


def _stop_broke(df):
    """Trials that went wrong (hung, failed, ran away, ...) in or before the stop phase: whatever they measured
    before, the button did not stop the run there."""
    return _not_ok(df) & ~_steps(df).isin(AFTER_STOP_STEPS)


def _went_on(df):
    return (_num(df, "llm_requests_after_stop") > 0) | (_num(df, "effects_new") > 0)


def _resumed(df):
    """Trials whose resume returned (resume_ok set, whatever went wrong after it) and those that hung or failed
    in resume: a hung resume is a resume that did not work, not a trial to leave out."""
    return df[df["resume_ok"].notna() | (_not_ok(df) & (_steps(df) == "resume"))]


def _causes(df, detail: bool = False) -> str:
    """`42 hung in stop, 27 failed in stop`: non-ok rows by status and the step their reason names, most first;
    with `detail`, each with its most frequent reason (shortened), so a verdict says why."""
    groups: dict[str, Counter[str]] = {}
    reasons = df["reason"] if "reason" in df else [None] * len(df)
    for status, reason in zip(df["status"], reasons, strict=True):
        step = _step(reason)
        what = f"{status} in {step}" if step else str(status)
        groups.setdefault(what, Counter())[_short(reason)] += 1
    parts = []
    for what, why in sorted(groups.items(), key=lambda kv: (-kv[1].total(), kv[0])):
        top = why.most_common(1)[0][0]
        parts.append(f"{why.total()} {what}" + (f" ({top})" if detail and top else ""))
    return ", ".join(parts)


def _short(reason: Any) -> str:
    """A reason without its step prefix and source location, at most 80 characters."""
    if not isinstance(reason, str):
        return ""
    text = re.sub(r"^'?\w+'?: ", "", re.sub(r" \(at [^)]*\)$", "", reason))
    return textwrap.shorten(text, 80, placeholder="...")


def _yes_no(k: int, n: int, why: str = "") -> str:
    if n == 0:
        return "-"
    if k == n:
        return "yes"
    word = "no" if k == 0 else "partly"
    return f"{word} ({k}/{n}: {why})" if why else ("no" if k == 0 else f"partly ({k}/{n})")


def capability_row(g) -> dict[str, Any]:
    """One adapter x mode's verdicts over every trial but the skipped (CAPABILITY_RULES says how)."""
    rows = g[g["status"] != "skipped"]
    ev = rows[rows["offset_kind"] == "event"]
    broke = _stop_broke(ev)
    on = ev[~broke & _went_on(ev)]
    k = int(broke.sum()) + len(on)
    hung = int((rows["status"] == "hung").sum())
    hangs = f"hangs ({hung}/{len(rows)})"
    if k:  # name the anchors when there are few: a reader can then tell a race from a habit
        where = sorted({f"{s} {o}" for s, o in on[["scenario", "offset"]].values})
        place = "; ".join(where) if len(where) <= 2 else ""
        why = [_causes(ev[broke])] if broke.any() else []
        if why and len(on):
            why.append(f"{len(on)} went on" + (f" at {place}" if place else ""))
        elif place:
            why.append(place)
        abort = f"no ({k}/{len(ev)}" + (f": {', '.join(why)}" if why else "") + ")" + (f"; {hangs}" if hung else "")
    elif hung:
        abort = hangs
    else:
        abort = "-" if ev.empty else "yes"
    resumed = _resumed(rows)
    if resumed.empty:
        no_resume = "resume_error" in rows and bool((rows["resume_error"] == "no resume").any())
        state = resume = "no resume" if no_resume else "-"
    else:
        died = resumed[resumed["resume_ok"].isna()]
        why = _causes(died) if len(died) else ""
        returned = resumed["resume_ok"].eq(True)
        clean = returned & (_num(resumed, "resume_llm_replays") == 0)
        state = _yes_no(int(clean.sum()), len(resumed), why)
        resume = _yes_no(int(returned.sum()), len(resumed), why)
    dup = _num(rows, "resume_duplicate_effects")
    dups = int((dup > 0).sum())
    landed = rows[_num(rows, "effects_after_stop") > 0]
    comp = _yes_no(int((_num(landed, "effects_leaked") == 0).sum()), len(landed))
    orphaned = int((_num(rows, "orphans") > 0).sum())
    return {
        "can abort": abort, "state kept": state, "can resume": resume,
        "repeats effect": "no" if dups == 0 else f"yes ({dups}/{int(dup.notna().sum())})",
        "compensated": comp, "orphans clean": "yes" if orphaned == 0 else f"no ({orphaned}/{len(rows)})",
    }


def verdict_facts(g) -> dict[str, list[Any]]:
    """Per verdict of capability_row, the per-trial facts its word is decided by: boolean Series over the
    trials it reads (True: the bad case: did not abort, hung, not resumed clean, ...). `stopbench compare`
    tests these, not the words, for a difference beyond the run-to-run spread."""
    rows = g[g["status"] != "skipped"]
    ev = rows[rows["offset_kind"] == "event"]
    resumed = _resumed(rows)
    returned = resumed["resume_ok"].eq(True)
    dup = _num(rows, "resume_duplicate_effects")
    landed = rows[_num(rows, "effects_after_stop") > 0]
    return {
        "can abort": [_stop_broke(ev) | _went_on(ev), rows["status"] == "hung"],
        "state kept": [~(returned & (_num(resumed, "resume_llm_replays") == 0))],
        "can resume": [~returned],
        "repeats effect": [(dup > 0)[dup.notna()]],
        "compensated": [~(_num(landed, "effects_leaked") == 0)],
        "orphans clean": [_num(rows, "orphans") > 0],
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
    (its variant adapters too: autogen-load-state measures AutoGen). Every trial but the skipped counts: one
    that hung or failed did not abort, and says so in the verdict (CAPABILITY_RULES, last paragraph)."""
    from harness.results.orphans import is_main, orphans_seen

    fw = claim["framework"]
    rows = df if fw == "*" else df[df["framework"] == fw]
    if claim["rule"] == "orphans_seen":  # over the main matrix and the orphan matrix (harness/results/orphans.py)
        return orphans_seen(rows)
    rows = rows[is_main(rows) & (rows["status"] != "skipped")]
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
    broke = _stop_broke(base)
    if rule in ("keeps_running", "stops_cleanly", "keeps_working"):  # one predicate, a claim of either polarity
        threads = rule != "keeps_working"  # the run's work only: tokens, model requests, new effects
        going = broke | _went_on(base) | (_num(base, "tokens_after_stop") > 1)
        on = base[going | (_num(base, "threads_left") > 0)] if threads else base[going]
        kept, none_kept = ("refuted", "confirmed") if rule == "stops_cleanly" else ("confirmed", "refuted")
        verdict = kept if len(on) == n else (none_kept if len(on) == 0 else "partly")
        return verdict, (f"{len(on)}/{n} trials kept generating tokens, asking the model, sending new effects"
                         + (" or running threads" if threads else "") + " after the stop"
                         + (f"; counted among them, as not stopped: {_causes(base[broke], True)}" if broke.any()
                            else ""))
    if rule == "resumes_cleanly":
        resumed = _resumed(base)
        good = resumed["resume_ok"].eq(True) & (_num(resumed, "resume_duplicate_effects").fillna(0) == 0)
        verdict = ("not measured" if resumed.empty else "confirmed" if good.all()
                   else "refuted" if not good.any() else "partly")
        by_mode = ", ".join(f"{m} {int(good.loc[g.index].sum())}/{len(g)}" for m, g in resumed.groupby("mode"))
        died = resumed[resumed["resume_ok"].isna()]
        never = base[broke]
        return verdict, (f"resume reached the end without a repeated effect in: {by_mode}"
                         + (f"; not resumed: {_causes(died, True)}" if len(died) else "")
                         + (f"; never got to resume: {_causes(never, True)}" if len(never) else ""))
    if rule == "no_abort_and_no_resume":
        ev = base[base["offset_kind"] == "event"]
        not_aborted = broke.loc[ev.index] | _went_on(ev)
        aborting = [m for m, g in ev.groupby("mode") if not not_aborted.loc[g.index].any()]
        wrong = [f"{m} {int(broke.loc[g.index].sum())}/{len(g)} ({_causes(g[broke.loc[g.index]], True)})"
                 for m, g in ev.groupby("mode") if broke.loc[g.index].any()]
        resumed = _resumed(base)
        kept = int(resumed["resume_ok"].eq(True).sum())
        died = resumed[resumed["resume_ok"].isna()]
        no_abort = not aborting
        dropped = kept == 0
        verdict = "confirmed" if no_abort and dropped else "refuted" if not no_abort and not dropped else "partly"
        return verdict, (f"modes that aborted at every event anchor: {', '.join(aborting) or 'none'}; "
                         + (f"event trials that hung or failed (did not abort): {'; '.join(wrong)}; " if wrong else "")
                         + f"resume reached the end in {kept}/{len(resumed)} trials"
                         + (f" (not resumed: {_causes(died, True)})" if len(died) else ""))
    return "unknown rule", rule


def _saga(rows) -> tuple[str, str]:
    """Leaking cells (mitigation none) measured again with saga: closed when no saga trial leaked or went wrong
    in or before the stop phase (its saga never ran). Rows of every status but skipped."""
    none = rows[rows["mitigation"] == "none"]
    saga = rows[rows["mitigation"].isin(["saga", "saga+idempotent"])]
    if saga.empty:
        return "not measured", "no trials with --mitigation saga"
    keys = ["adapter", "mode", "scenario", "offset", "tool_style"]
    leaky = none[_num(none, "effects_leaked") > 0][keys].drop_duplicates()
    merged = leaky.merge(saga, on=keys)
    if merged.empty:
        return "not measured", "no leaking cell was measured with saga"
    broke = _stop_broke(merged)
    still = broke | ~(_num(merged, "effects_leaked") == 0)
    closed = ~merged.assign(still=still).groupby(keys)["still"].any()
    verdict = "confirmed" if closed.all() else ("refuted" if not closed.any() else "partly")
    open_cells = ", ".join("/".join(map(str, k)) for k, v in closed.items() if not v)
    why = ("; each still-leaking row's `saga` and `saga_late` marks name what the saga compensated, and its "
           "ledger shows what committed after them" if open_cells else "")
    wrong = f"; saga trials that went wrong before the saga ran: {_causes(merged[broke], True)}" if broke.any() else ""
    return verdict, (f"{int(closed.sum())}/{len(closed)} leaking cells had 0 leaked with saga"
                     + (f"; still leaking: {open_cells}" if open_cells else "") + why + wrong)
