"""The measured capability table: one adapter x mode's verdicts (can abort, state kept, ...), each derived from
its rows by the rule CAPABILITY_RULES prints. The claims (harness/results/claims.py) and the scorecard read the
trials the same way, with the predicates here.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from typing import Any

from harness.results.cells import numbers
from harness.results.selection import BUTTON, MOMENT, is_anchored, is_measured, went_wrong

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



#: the trial steps after the stop phase: a trial that went wrong only there had its stop measured in full
STEPS_AFTER_STOP = frozenset({"resume", "settle_resume", "close"})


def steps(df):
    """The step each trial went wrong in (its row's `failed_step`; None: ok, skipped, or a crash or an exit
    outside any step)."""
    import pandas as pd

    return df["failed_step"] if "failed_step" in df else pd.Series(None, index=df.index, dtype=object)


def stop_broke(df):
    """Trials that went wrong (hung, failed, ran away, ...) in or before the stop phase: whatever they measured
    before, the button did not stop the run there."""
    return went_wrong(df) & ~steps(df).isin(STEPS_AFTER_STOP)


def went_on(df):
    """Trials whose run asked the model or sent a new effect after the stop."""
    return (numbers(df, "llm_requests_after_stop") > 0) | (numbers(df, "effects_new") > 0)


def resumes(df):
    """Trials whose resume returned (resume_ok set, whatever went wrong after it) and those that hung or failed
    in resume: a hung resume is a resume that did not work, not a trial to leave out."""
    return df[df["resume_ok"].notna() | (went_wrong(df) & (steps(df) == "resume"))]


def causes(df, detail: bool = False) -> str:
    """`42 hung in stop, 27 failed in stop`: non-ok rows by status and the step they went wrong in, most first;
    with `detail`, each with its most frequent reason (shortened), so a verdict says why."""
    groups: dict[str, Counter[str]] = {}
    reasons = df["reason"] if "reason" in df else [None] * len(df)
    for status, step, reason in zip(df["status"], steps(df), reasons, strict=True):
        what = f"{status} in {step}" if isinstance(step, str) and step else str(status)
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
    rows = g[is_measured(g)]
    ev = rows[is_anchored(rows, "event")]
    broke = stop_broke(ev)
    on = ev[~broke & went_on(ev)]
    k = int(broke.sum()) + len(on)
    hung = int((rows["status"] == "hung").sum())
    hangs = f"hangs ({hung}/{len(rows)})"
    if k:  # name the anchors when there are few: a reader can then tell a race from a habit
        where = sorted({f"{s} {o}" for s, o in on[list(MOMENT)].values})
        place = "; ".join(where) if len(where) <= 2 else ""
        why = [causes(ev[broke])] if broke.any() else []
        if why and len(on):
            why.append(f"{len(on)} went on" + (f" at {place}" if place else ""))
        elif place:
            why.append(place)
        abort = f"no ({k}/{len(ev)}" + (f": {', '.join(why)}" if why else "") + ")" + (f"; {hangs}" if hung else "")
    elif hung:
        abort = hangs
    else:
        abort = "-" if ev.empty else "yes"
    resumed = resumes(rows)
    if resumed.empty:
        no_resume = "resume_error" in rows and bool((rows["resume_error"] == "no resume").any())
        state = resume = "no resume" if no_resume else "-"
    else:
        died = resumed[resumed["resume_ok"].isna()]
        why = causes(died) if len(died) else ""
        returned = resumed["resume_ok"].eq(True)
        clean = returned & (numbers(resumed, "resume_llm_replays") == 0)
        state = _yes_no(int(clean.sum()), len(resumed), why)
        resume = _yes_no(int(returned.sum()), len(resumed), why)
    dup = numbers(rows, "resume_duplicate_effects")
    dups = int((dup > 0).sum())
    landed = rows[numbers(rows, "effects_after_stop") > 0]
    comp = _yes_no(int((numbers(landed, "effects_leaked") == 0).sum()), len(landed))
    orphaned = int((numbers(rows, "orphans") > 0).sum())
    return {
        "can abort": abort, "state kept": state, "can resume": resume,
        "repeats effect": "no" if dups == 0 else f"yes ({dups}/{int(dup.notna().sum())})",
        "compensated": comp, "orphans clean": "yes" if orphaned == 0 else f"no ({orphaned}/{len(rows)})",
    }


def verdict_facts(g) -> dict[str, list[Any]]:
    """Per verdict of capability_row, the per-trial facts its word is decided by: boolean Series over the
    trials it reads (True: the bad case: did not abort, hung, not resumed clean, ...). `stopbench compare`
    tests these, not the words, for a difference beyond the run-to-run spread."""
    rows = g[is_measured(g)]
    ev = rows[is_anchored(rows, "event")]
    resumed = resumes(rows)
    returned = resumed["resume_ok"].eq(True)
    dup = numbers(rows, "resume_duplicate_effects")
    landed = rows[numbers(rows, "effects_after_stop") > 0]
    return {
        "can abort": [stop_broke(ev) | went_on(ev), rows["status"] == "hung"],
        "state kept": [~(returned & (numbers(resumed, "resume_llm_replays") == 0))],
        "can resume": [~returned],
        "repeats effect": [(dup > 0)[dup.notna()]],
        "compensated": [~(numbers(landed, "effects_leaked") == 0)],
        "orphans clean": [numbers(rows, "orphans") > 0],
    }


def capability_rows(df) -> dict[tuple[str, str], dict[str, Any]]:
    """(adapter, mode) -> its capability_row, over the rows with mitigation none: computed once per report, read
    by the capability table and the scorecard."""
    base = df[df["mitigation"] == "none"]
    return {key: capability_row(g) for key, g in base.groupby(list(BUTTON), sort=True)}
