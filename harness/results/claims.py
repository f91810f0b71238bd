"""The article's claims, checked: each claim (adapters/<folder>/claims.yaml, data/claims.yaml) names a rule, and
its verdict is derived from rows by that rule, with the rows that decided it.

Nothing here is typed in: a verdict says which rows decided it, and "not measured" where none exist. The
trials are read as the capability table reads them (harness/results/capability.py, CAPABILITY_RULES).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT, discover
from harness.results.capability import causes
from harness.results.cells import numbers
from harness.results.judgement import (
    PREDICATE,
    Share,
    Word,
    all_some_none,
    in_flight_cancelled,
    kept_working,
    nothing_to_stop,
    resumed,
    share,
    state_kept,
    stop_broke,
    stop_judged,
    tied,
    went_on,
    wilson,
)
from harness.results.orchestrators import census_rows, orchestrators_need_a_reaper
from harness.results.orphans import orphans_seen
from harness.results.scorecard import coverage, ranked
from harness.results.selection import BUTTON, CONDITION, in_main_matrix, is_measured

CLAIM_KEYS = ("id", "framework", "claim", "rule")
#: the optional keys that narrow a claim to some of its framework's trials: a stop mode, a tool style
NARROWING = ("mode", "tool_style")


def load_claims(root: Path = ROOT) -> list[dict[str, Any]]:
    """The article's claims, in the table's order: its thesis and table (data/article.yaml), then each framework's
    own (`adapters/<folder>/claims.yaml`,
    `framework` defaulting to the folder's name), ordered by their `order` (the article's), then by folder
    and place in the file; then the cross-framework ones of data/claims.yaml (`framework: "*"`)."""
    claims = []
    for folder in sorted(discover(root), key=lambda f: f.folder.name):
        if (folder.folder / "claims.yaml").exists():
            claims += _claims_file(folder.folder / "claims.yaml", framework=folder.name)
    claims.sort(key=lambda c: c.get("order", math.inf))  # stable: folder and file order within an order
    return _claims_file(root / "data" / "article.yaml") + claims + _claims_file(root / "data" / "claims.yaml")


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
    """(verdict, the rows that decide it): `judged` without its trials."""
    verdict, evidence, _, _ = _judge(claim, df)
    return verdict, evidence


def judged(claim: dict[str, Any], df) -> dict[str, Any]:
    """The claim's verdict, the evidence in words, the rule in words (`rule_text`), what its k counts
    (`k_counts`), and the trials behind it: `over` (every trial it was judged on that a button page lists) and
    `counted` (the k that decided it: that kept running, did not resume clean, leaked, ...), each a frame of rows."""
    verdict, evidence, over, counted = _judge(claim, df)
    return {"verdict": verdict, "evidence": evidence, "rule_text": rule_text(claim["rule"]),
            "k_counts": K_COUNTS.get(claim["rule"], ""), "over": over, "counted": counted}


def rule_text(rule: str) -> str:
    """The rule in words: the docstring of the function that applies it."""
    fn = RULES.get(rule)
    return " ".join((fn.__doc__ or "").split()) if fn else f"unknown rule {rule!r}"


def _judge(claim: dict[str, Any], df):
    """(verdict, evidence, over, counted). A framework's rows are those whose `framework` field names it (its
    variant adapters too: autogen-load-state measures AutoGen). Every trial but the skipped counts: one that
    hung or failed did not abort, and says so in the verdict (CAPABILITY_RULES, last paragraph)."""
    fw = claim["framework"]
    rows = df if fw == "*" else df[df["framework"] == fw]
    rule = claim["rule"]
    fn = RULES.get(rule)
    if fn is None:
        return Word.UNKNOWN_RULE, rule, rows.iloc[:0], rows.iloc[:0]
    if rule in WHOLE_ROWS:
        return fn(claim, rows)
    rows = rows[in_main_matrix(rows) & is_measured(rows) & ~nothing_to_stop(rows)]
    base = rows[rows["mitigation"] == "none"]
    for key in NARROWING:
        if claim.get(key):
            base = base[base[key] == claim[key]]
    if base.empty:
        narrowed = "".join(f" and {key} {claim[key]}" for key in NARROWING if claim.get(key))
        return Word.NOT_MEASURED, (f"no rows for this framework{narrowed} (skipped trials and those with nothing "
                                   "left to stop left out)"), base, base
    return fn(claim, base)


def _kept_going(claim: dict[str, Any], base, threads: bool):
    n = len(base)
    broke = stop_broke(base)
    going = kept_working(base)
    on = base[going | (numbers(base, "threads_left") > 0)] if threads else base[going]
    kept, none_kept = ((Word.REFUTED, Word.CONFIRMED) if claim["rule"] == "stops_cleanly"
                       else (Word.CONFIRMED, Word.REFUTED))
    verdict = kept if len(on) == n else (none_kept if len(on) == 0 else Word.PARTLY)
    return verdict, (f"{len(on)}/{n} trials kept generating tokens, asking the model, sending new effects"
                     + (" or running threads" if threads else "") + " after the stop"
                     + (f"; counted among them, as not stopped: {causes(base[broke], True)}" if broke.any()
                        else "")), base, on


def keeps_running(claim: dict[str, Any], base):
    """Over every trial of the claim's button(s) (mitigation none, skipped left out): a trial kept running if it
    went wrong in or before the stop phase, or after the stop generated more than TOKEN_THRESHOLD token(s), asked
    the model, sent a new effect or left a thread running (trials with nothing left to stop left out). Confirmed
    when every trial kept running, refuted when none did, partly otherwise."""
    return _kept_going(claim, base, threads=True)


def stops_cleanly(claim: dict[str, Any], base):
    """The opposite of keeps_running over the same trials: confirmed when no trial went wrong in or before the
    stop phase, generated more than TOKEN_THRESHOLD token(s), asked the model, sent a new effect or left a thread
    running after the stop; refuted when every trial did; partly otherwise."""
    return _kept_going(claim, base, threads=True)


def keeps_working(claim: dict[str, Any], base):
    """keeps_running without the threads (a claim about the run's work, not about threads the app keeps): a
    trial kept working if it went wrong in or before the stop phase, or after the stop generated more than
    TOKEN_THRESHOLD token(s), asked the model or sent a new effect. Confirmed when every trial did, refuted when
    none did."""
    return _kept_going(claim, base, threads=False)


def _by_button(rows, good) -> str:
    """`adapter/mode k/n, ...`: per button, its good trials of those read (a mode named with its adapter, so two
    adapters' modes of one name are never pooled)."""
    return ", ".join(f"{a}/{m} {int(good.loc[g.index].sum())}/{len(g)}"
                     for (a, m), g in rows.groupby(list(BUTTON), sort=True))


def resumes_cleanly(claim: dict[str, Any], base):
    """Over the trials that resumed (resume returned, or hung or failed in it): confirmed when every resume
    reached the final answer without committing again an effect of before the resume, refuted when none did,
    partly otherwise."""
    broke = stop_broke(base)
    res = base[resumed(base)]
    good = res["resume_ok"].eq(True) & (numbers(res, "resume_duplicate_effects").fillna(0) == 0)
    verdict = Word.NOT_MEASURED if res.empty else all_some_none(int(good.sum()), len(res), Word.CONFIRMED,
                                                                   Word.REFUTED)
    died = res[res["resume_ok"].isna()]
    never = base[broke]
    return verdict, (f"resume reached the end without a repeated effect in: {_by_button(res, good)}"
                     + (f"; not resumed: {causes(died, True)}" if len(died) else "")
                     + (f"; never got to resume: {causes(never, True)}" if len(never) else "")), \
        res, res[~good]


def no_abort_and_no_resume(claim: dict[str, Any], base):
    """Two halves over the claim's buttons (each an adapter and a mode): no button aborts (a button aborts when
    none of its judged trials - event-anchored, or time-anchored and on time - went wrong in or before the stop
    phase, asked the model or sent a new effect after the stop), and no resume keeps the state (reaches the final
    answer without asking the model a completed turn again). Confirmed when both hold, refuted when neither does,
    partly otherwise."""
    broke = stop_broke(base)
    ev = base[stop_judged(base)]
    not_aborted = broke.loc[ev.index] | went_on(ev)
    aborting = [f"{a}/{m}" for (a, m), g in ev.groupby(list(BUTTON)) if not not_aborted.loc[g.index].any()]
    wrong = [f"{a}/{m} {int(broke.loc[g.index].sum())}/{len(g)} ({causes(g[broke.loc[g.index]], True)})"
             for (a, m), g in ev.groupby(list(BUTTON)) if broke.loc[g.index].any()]
    res = base[resumed(base)]
    kept_state = state_kept(res)
    kept = int(kept_state.sum())
    died = res[res["resume_ok"].isna()]
    no_abort = not aborting
    dropped = kept == 0
    verdict = (Word.CONFIRMED if no_abort and dropped else Word.REFUTED if not no_abort and not dropped
               else Word.PARTLY)
    counted = base.loc[ev.index[~not_aborted.to_numpy()].union(res.index[kept_state.to_numpy()])]
    return verdict, (f"buttons that aborted at every judged trial: {', '.join(aborting) or 'none'}; "
                     + (f"judged trials that hung or failed (did not abort): {'; '.join(wrong)}; " if wrong else "")
                     + f"resume kept the state (reached the end without asking a completed turn again) in "
                       f"{kept}/{len(res)} trials ({_by_button(res, kept_state)})"
                     + (f" (not resumed: {causes(died, True)})" if len(died) else "")), base, counted


def stops_effects_in_flight(claim: dict[str, Any], base):
    """Over the trials stopped while an effect's request was in flight (an on:effect_received:... anchor), whatever
    their status: confirmed when in every one the cancel reached the tool's request before the service committed
    it (the client had gone at the commit, or the service dropped the effect for it), refuted when in none, partly
    otherwise. Whether the effect then landed is the service's to decide (one that commits what it received lands
    it anyway; one that honours a disconnect drops it) and is named apart."""
    share = PREDICATE["in_flight_cancelled"]
    over = base[share.over(base)]
    cancelled = over[in_flight_cancelled(over)]
    if over.empty:
        return Word.NOT_MEASURED, "no trial was stopped with an effect in flight", over, cancelled
    verdict = all_some_none(len(cancelled), len(over), Word.CONFIRMED, Word.REFUTED)
    landed = int((numbers(over, "effects_in_flight") > 0).sum())
    good = in_flight_cancelled(over)
    return verdict, (f"{len(cancelled)}/{len(over)} trials stopped with an effect in flight had its client gone "
                     f"before the service committed it ({_by_button(over, good)}); the effect landed in "
                     f"{landed}/{len(over)} (a service that commits what it received lands it anyway, one that "
                     "honours a disconnect drops it)"), over, cancelled


def orphans_need_reaping(claim: dict[str, Any], rows):
    """Over every condition: the main matrix after close(), and the orphan matrix's MCP launch variants after
    close() and after a host crash (SIGKILL). Confirmed when any trial left a process the harness had to reap,
    refuted when none did."""
    verdict, evidence = orphans_seen(rows)
    main = rows[in_main_matrix(rows) & (rows["mitigation"] == "none") & is_measured(rows)]
    return verdict, evidence, main, main[numbers(main, "orphans") > 0]


def orphans_after_close(claim: dict[str, Any], rows):
    """Over the trials whose app closed: the main matrix after close(), and the MCP launch variants after
    close(); a host crash is left out (a server deaf to its stdin outlives any crashed host, whatever the
    framework). Confirmed when any such trial left a process the harness had to reap, refuted when none did."""
    verdict, evidence = orphans_seen(rows, hosts=("close",))
    main = rows[in_main_matrix(rows) & (rows["mitigation"] == "none") & is_measured(rows)]
    return verdict, evidence, main, main[numbers(main, "orphans") > 0]


def orchestrators_leave_processes(claim: dict[str, Any], rows):
    """Over the census trials (an orchestrator CLI, or an SDK that runs one): confirmed when any had processes of its
    run alive 30 s after the stop, refuted when none had; its evidence names the adapters and stop modes."""
    verdict, evidence = orchestrators_need_a_reaper(rows)
    over = census_rows(rows)
    over = over[numbers(over, "survivors_30s").notna()]
    return verdict, evidence, over, over[numbers(over, "survivors_30s") > 0]


def saga_closes_leak(claim: dict[str, Any], rows):
    """The cells (button x scenario x offset x tool style) that leaked an effect with mitigation none, measured
    again with the harness's saga: a cell's leak is closed when none of its saga trials leaked an effect or went
    wrong in or before the stop phase (its saga never ran). Confirmed when every such cell is closed, refuted
    when none is, partly otherwise."""
    rows = rows[in_main_matrix(rows) & is_measured(rows)]
    none = rows[rows["mitigation"] == "none"]
    saga = rows[rows["mitigation"].isin(["saga", "saga+idempotent"])]
    if saga.empty:
        return Word.NOT_MEASURED, "no trials with --mitigation saga", saga, saga
    keys = [*BUTTON, *CONDITION]
    leaky = none[numbers(none, "effects_leaked") > 0][keys].drop_duplicates()
    merged = leaky.merge(saga, on=keys)
    if merged.empty:
        return Word.NOT_MEASURED, "no leaking cell was measured with saga", merged, merged
    broke = stop_broke(merged)
    still = broke | ~(numbers(merged, "effects_leaked") == 0)
    closed = ~merged.assign(still=still).groupby(keys)["still"].any()
    verdict = all_some_none(int(closed.sum()), len(closed), Word.CONFIRMED, Word.REFUTED)
    open_cells = ", ".join("/".join(map(str, k)) for k, v in closed.items() if not v)
    why = ("; each still-leaking row's `saga` and `saga_late` marks name what the saga compensated, and its "
           "ledger shows what committed after them" if open_cells else "")
    wrong = f"; saga trials that went wrong before the saga ran: {causes(merged[broke], True)}" if broke.any() else ""
    return verdict, (f"{int(closed.sum())}/{len(closed)} leaking cells had 0 leaked with saga"
                     + (f"; still leaking: {open_cells}" if open_cells else "") + why + wrong), \
        merged, merged[still.to_numpy()]


# --- the article's thesis and its table, judged over every framework ----------------------------------------

def _zero_like(s: Share) -> Share:
    return Share(0, s.n, s.conditions, 0.0, *wilson(0, s.conditions))


def _all_like(s: Share) -> Share:
    return Share(s.n, s.n, s.conditions, 1.0, *wilson(s.conditions, s.conditions))


def _within_noise_of_zero(s: Share) -> bool:
    """A share that does not differ from 0 of as many conditions beyond the interval (and that applies)."""
    return s.n > 0 and tied(s, _zero_like(s))


def _within_noise_of_all(s: Share) -> bool:
    """A share that does not differ from N of N beyond the interval (and that applies)."""
    return s.n > 0 and tied(s, _all_like(s))


#: a table property -> (the share whose being 0 within the noise gives a button the property, in words)
PROPERTIES: dict[str, tuple[Callable[[Any], Share], str]] = {
    "can_abort": (lambda r: PREDICATE["did_not_stop"].share(r), "did not stop"),
    "state_kept": (lambda r: share(r, resumed(r), ~state_kept(r)), "resumed without keeping the state"),
    "can_resume": (lambda r: PREDICATE["resume_refused"].share(r), "resume refused"),
    "orphan_cleanup": (lambda r: PREDICATE["processes"].share(r), "processes left"),
}


def _buttons_with(rows, prop: str) -> tuple[list[str], list[str], list[str]]:
    """Of a framework's ranked buttons (those measured under all its conditions): those that have `prop` (their
    share within the noise of 0), those that lack it outright (within the noise of all), and every ranked one with
    its share, each named adapter/mode."""
    fn, _ = PROPERTIES[prop]
    groups = dict(iter(rows.groupby(list(BUTTON), sort=True)))
    have, lack, shown = [], [], []
    for key in sorted(ranked(coverage(groups))):
        s = fn(groups[key])
        shown.append(f"{key[0]}/{key[1]} {s.k}/{s.n} [{s.lo:.0%}..{s.hi:.0%}]")
        if _within_noise_of_zero(s):
            have.append(f"{key[0]}/{key[1]}")
        elif _within_noise_of_all(s):
            lack.append(f"{key[0]}/{key[1]}")
    return have, lack, shown


def _main_rows(rows):
    return rows[in_main_matrix(rows) & is_measured(rows) & ~nothing_to_stop(rows) & (rows["mitigation"] == "none")]


def only_these_stop(claim: dict[str, Any], rows):
    """Over every framework measured: a framework can really stop when one of its ranked buttons (measured under
    every condition it was) did not stop in a share within the noise of 0 (the Newcombe interval of the difference
    from 0/N holds 0). Confirmed when, of the claim's `frameworks`, exactly those it names in `stop` can really
    stop; refuted when none of them is as the claim says; partly otherwise."""
    rows = _main_rows(rows)
    named, stoppers = list(claim.get("frameworks") or []), set(claim.get("stop") or [])
    lines, right, measured = [], 0, 0
    for fw, g in rows.groupby("framework", sort=True):
        have, _, _ = _buttons_with(g, "can_abort")
        lines.append(f"{fw}: " + (", ".join(have) if have else "no button"))
        if fw in named:
            measured += 1
            right += (bool(have) == (fw in stoppers))
    if not measured:
        return Word.NOT_MEASURED, "none of the claim's frameworks was measured", rows.iloc[:0], rows.iloc[:0]
    verdict = all_some_none(right, measured, Word.CONFIRMED, Word.REFUTED)
    over = rows[rows["framework"].isin(named)]
    return verdict, (f"{right}/{measured} of {', '.join(named)} as the claim says; the buttons that really stop, "
                     "per framework: " + "; ".join(lines)), over, over.iloc[:0]


def table_cell(claim: dict[str, Any], rows):
    """One cell of the article's table (a framework and a `property`: can_abort, state_kept, can_resume,
    orphan_cleanup), against what it `stated` (yes or no). Per ranked button (measured under every condition its
    framework was), the share of trials that did not stop, resumed without keeping the state, were refused a
    resume, or left processes: the framework has the property (yes) when one button's share is within the noise
    of 0 (for orphan_cleanup: every button's), lacks it (no) when every button's is within the noise of all (for
    orphan_cleanup: one button's), partly otherwise. Confirmed when that is what the article stated, partly when
    partly, refuted when the opposite."""
    rows = _main_rows(rows)
    prop = str(claim.get("property"))
    if prop not in PROPERTIES:
        return Word.UNKNOWN_RULE, f"unknown property {prop!r} (known: {', '.join(PROPERTIES)})", rows, rows.iloc[:0]
    if rows.empty:
        return Word.NOT_MEASURED, "no rows for this framework", rows, rows
    have, lack, shown = _buttons_with(rows, prop)
    total = len(shown)
    if prop == "orphan_cleanup":
        measured = Word.YES if len(have) == total else Word.NO if lack else Word.PARTLY
    else:
        measured = Word.YES if have else Word.NO if len(lack) == total else Word.PARTLY
    stated = Word.YES if str(claim.get("stated")).lower() in ("yes", "true") else Word.NO
    verdict = (Word.CONFIRMED if measured == stated else Word.PARTLY if measured == Word.PARTLY
               else Word.REFUTED)
    return verdict, (f"measured {measured} (stated {stated}): {PROPERTIES[prop][1]} per ranked button: "
                     f"{'; '.join(shown)}"), rows, rows.iloc[:0]


#: rules that read every row of the claim's framework (other matrices, other mitigations) themselves
WHOLE_ROWS = ("orphans_seen", "orphans_after_close", "orchestrators_leave_processes", "saga_closes_leak",
              "only_these_stop", "table_cell")
#: a rule whose verdict is not a count of trials (it reads each framework's buttons)
NOT_COUNTED = "-"
#: what a claim's k (in "judged on") counts, per rule
K_COUNTS = {"keeps_running": "trials that kept running", "stops_cleanly": "trials that kept running",
            "keeps_working": "trials that kept working", "resumes_cleanly": "resumes that were not clean",
            "no_abort_and_no_resume": "trials that aborted or resumes that kept the state",
            "stops_effects_in_flight": "trials whose cancel reached the tool before the commit",
            "saga_closes_leak": "saga trials still leaking", "orphans_seen": "trials that left processes",
            "orphans_after_close": "trials that left processes",
            "orchestrators_leave_processes": "trials with processes alive 30 s after the stop",
            "only_these_stop": NOT_COUNTED,
            "table_cell": NOT_COUNTED}


#: rule name (a claim's `rule`) -> the function that applies it; its docstring is the rule in words
RULES = {fn.__name__: fn for fn in (keeps_running, stops_cleanly, keeps_working, resumes_cleanly,
                                    no_abort_and_no_resume, saga_closes_leak, stops_effects_in_flight,
                                    only_these_stop, table_cell)}
RULES["orphans_seen"] = orphans_need_reaping
RULES["orphans_after_close"] = orphans_after_close
RULES["orchestrators_leave_processes"] = orchestrators_leave_processes
