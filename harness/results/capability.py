"""The measured capability table: one adapter x mode's verdicts (can abort, state kept, ...). Each verdict is
declared once below (`VERDICTS`: its column, its rule in words, the function that judges it) as a typed value
(`Verdict`: a word, k of n, the interval, the causes, the trials); the table's text is made from it by `text`,
and `stopbench compare`, the history and the side-by-side compare the values, never the text. The trials are read
with the predicates of harness/results/judgement.py, as the scorecard and the claims read them.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.model_rule import RULES
from harness.results.cells import numbers
from harness.results.judgement import (
    Word,
    all_some_none,
    did_not_stop,
    nothing_to_stop,
    resume_reached_end,
    resume_repeated,
    resumed,
    state_kept,
    steps,
    stop_broke,
    stop_judged,
    went_on,
    wilson,
)
from harness.results.selection import BUTTON, MOMENT, is_measured

PREAMBLE = """\
Rules (over rows with mitigation none; N = trials behind the row). Skipped trials (the job ended before the
stop offset, or the mode cannot run that tool style) are left out of every cell, and so are trials with nothing
left to stop (the job had failed or ended before the press: counted apart); n = the trials that are left. Every
other trial counts, whatever its status. One that hung, failed, ran away (or ended in any other non-ok status) in
or before the stop phase - its step is not resume, settle_resume or close - did not stop the run, whatever it
measured before; one that went wrong only in one of those later steps is read by what it measured."""


@dataclass(frozen=True)
class Verdict:
    """One capability cell as data: its word, k of the n trials it reads (k: the trials behind the word: those
    that did not abort, resumed clean, repeated, ...), the Wilson interval of k/n, and why (the trials that went
    wrong by status and step, the moments where the run went on, the hung trials of the button)."""

    column: str
    word: Word
    k: int = 0
    n: int = 0
    causes: tuple[tuple[str, int], ...] = ()  # ("hung in stop", 42), most first
    places: tuple[str, ...] = ()  # scenario and offset of the trials that went on
    went_on: int = 0  # trials that asked the model or sent a new effect after the stop
    hung: int = 0  # hung trials of the button, any step
    measured: int = 0  # trials of the button (skipped and nothing-to-stop ones left out)
    trials: tuple[str, ...] = ()  # trial ids of the k trials

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def __str__(self) -> str:
        return text(self)

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {"word": str(self.word), "k": self.k, "n": self.n, "lo": round(lo, 4), "hi": round(hi, 4),
                "causes": dict(self.causes), "text": text(self)}


def _what(status: Any, step: Any) -> str:
    """`hung in stop`: a non-ok status and the step it went wrong in (the status alone outside any step)."""
    return f"{status} in {step}" if isinstance(step, str) and step else str(status)


def _causes(rows) -> tuple[tuple[str, int], ...]:
    """Non-ok rows by status and the step they went wrong in, most first."""
    counts = Counter(map(_what, rows["status"], steps(rows)))
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def causes(df, detail: bool = False) -> str:
    """`42 hung in stop, 27 failed in stop`: non-ok rows by status and step, most first; with `detail`, each with
    its most frequent reason (shortened), so a verdict says why."""
    groups: dict[str, Counter[str]] = {}
    reasons = df["reason"] if "reason" in df else [None] * len(df)
    for status, step, reason in zip(df["status"], steps(df), reasons, strict=True):
        groups.setdefault(_what(status, step), Counter())[_short(reason)] += 1
    parts = []
    for what, why in sorted(groups.items(), key=lambda kv: (-kv[1].total(), kv[0])):
        top = why.most_common(1)[0][0]
        parts.append(f"{why.total()} {what}" + (f" ({top})" if detail and top else ""))
    return ", ".join(parts)


def _short(reason: Any) -> str:
    """A reason without its step prefix and source location, at most 80 characters."""
    if not isinstance(reason, str):
        return ""
    text_ = re.sub(r"^'?\w+'?: ", "", re.sub(r" \(at [^)]*\)$", "", reason))
    return textwrap.shorten(text_, 80, placeholder="...")


def _ids(rows) -> tuple[str, ...]:
    return tuple(map(str, rows["trial_id"])) if "trial_id" in rows else ()


def _judged(g):
    """The trials a verdict reads: every trial but the skipped and those with nothing left to stop."""
    return g[is_measured(g) & ~nothing_to_stop(g)]


# --- the verdicts -------------------------------------------------------------------------------------------

def can_abort(g) -> Verdict:
    rows = _judged(g)
    judged = rows[stop_judged(rows)]
    broke = stop_broke(judged)
    on = judged[~broke & went_on(judged)]
    bad = judged[did_not_stop(judged)]
    hung = int((rows["status"] == "hung").sum())
    k = len(bad)
    word = Word.NO if k else Word.HANGS if hung else Word.NOT_APPLICABLE if judged.empty else Word.YES
    return Verdict("can abort", word, k, len(judged), _causes(judged[broke]),
                   tuple(sorted({f"{s} {o}" for s, o in on[list(MOMENT)].values})), len(on), hung, len(rows),
                   _ids(bad))


def _resumed(g):
    rows = _judged(g)
    return rows, rows[resumed(rows)]


def _resume_verdict(column: str, g, good: Callable[[Any], Any]) -> Verdict:
    rows, res = _resumed(g)
    if res.empty:
        no_resume = "resume_error" in rows and bool((rows["resume_error"] == "no resume").any())
        return Verdict(column, Word.NO_RESUME if no_resume else Word.NOT_APPLICABLE, measured=len(rows))
    k = int(good(res).sum())
    died = res[res["resume_ok"].isna()]
    return Verdict(column, all_some_none(k, len(res), Word.YES, Word.NO), k, len(res), _causes(died),
                   measured=len(rows), trials=_ids(res[good(res)]))


def state_kept_verdict(g) -> Verdict:
    return _resume_verdict("state kept", g, state_kept)


def can_resume(g) -> Verdict:
    return _resume_verdict("can resume", g, resume_reached_end)


def repeats_effect(g) -> Verdict:
    rows = _judged(g)
    dup = numbers(rows, "resume_duplicate_effects")
    over = rows[dup.notna()]
    k = int(resume_repeated(over).sum())
    return Verdict("repeats effect", Word.YES if k else Word.NO, k, len(over), measured=len(rows),
                   trials=_ids(over[resume_repeated(over)]))


def compensated(g) -> Verdict:
    rows = g[is_measured(g)]  # a leak is a leak: every trial, nothing-to-stop ones too
    landed = rows[numbers(rows, "effects_after_stop") > 0]
    clean = numbers(landed, "effects_leaked") == 0
    return Verdict("compensated", all_some_none(int(clean.sum()), len(landed), Word.YES, Word.NO),
                   int(clean.sum()), len(landed), measured=len(rows), trials=_ids(landed[~clean]))


def orphans_clean(g) -> Verdict:
    rows = g[is_measured(g)]
    left = numbers(rows, "orphans") > 0
    k = int(left.sum())
    return Verdict("orphans clean", Word.NO if k else Word.YES, k, len(rows), measured=len(rows),
                   trials=_ids(rows[left]))


@dataclass(frozen=True)
class VerdictRule:
    """One column of the capability table: its name, its rule in words (the glossary and the rules under the
    table print it), and the function that judges a button's rows."""

    column: str
    rule: str
    judge: Callable[[Any], Verdict]
    #: judged on what a resume did, which the world's model rule decides in part (harness/model_rule.py)
    reads_resume: bool = False


VERDICTS: tuple[VerdictRule, ...] = (
    VerdictRule("can abort", "yes if no judged trial did not stop and no trial hung; the judged trials are the "
                "event-anchored ones and the time-anchored ones whose stop fired on time; a trial did not stop if it "
                "went wrong in or before the stop phase, or asked the model (llm_requests_after_stop > 0) or sent a "
                "new effect (effects_new > 0, by the call's send time) after the stop. no (k/E: why) if k of the E "
                "did not stop: why = how many hung, failed, ... and in which step, then how many went on and where "
                "(the anchors, when one or two); \"hangs (h/n)\" when h of the n trials hung (any offset, any step): "
                "alone when every judged trial stopped, else after the \"no\".", can_abort),
    VerdictRule("state kept", "over the resumed trials (resume returned, whatever the trial's status, or hung or "
                "failed in resume: named, \"(k/n: 1 hung in resume)\"): yes if resume reached the final answer "
                "without asking the model a completed turn again (resume_ok and resume_llm_replays == 0) in every "
                "one; partly if in some; no if in none; \"no resume\" if the adapter has none; \"-\" if no trial "
                "got to a resume.", state_kept_verdict, reads_resume=True),
    VerdictRule("can resume", "resume_ok in k of those n resumed trials (yes = all, no = none).", can_resume,
                reads_resume=True),
    VerdictRule("repeats effect", "yes if resume_duplicate_effects > 0 (an effect of before the resume that the "
                "resume committed again) in any trial, k/n of the trials that started a resume; else no. A retry "
                "within one phase (retry_duplicate_effects: the agent called a tool again) is not counted.",
                repeats_effect, reads_resume=True),
    VerdictRule("compensated", "over every trial, hung and failed too (a leak is a leak): yes if every effect "
                "committed after the stop was compensated (effects_leaked == 0 where effects_after_stop > 0); no if "
                "none was; partly (k/n) if some; \"-\" if no effect landed after a stop.", compensated),
    VerdictRule("orphans clean", "yes if orphans == 0 in every trial; else no (k/n trials left processes "
                "running).", orphans_clean),
)
VERDICT = {v.column: v for v in VERDICTS}
#: the medians the capability table shows beside its verdicts
MEDIANS_RULE = "tokens+ / leaked / lie ms / tax $ = medians over ok trials (tax from data/prices.yaml)."


def model_rule_text(df: pd.DataFrame) -> str:
    """Which rule the world's model followed when a tool result read as interrupted or as an error, from the rows'
    `model_rule` and its declaration (harness/model_rule.py): the resume columns depend on it."""
    counts = df["model_rule"].value_counts() if "model_rule" in df.columns and len(df) else pd.Series(dtype=int)
    if counts.empty:
        return ""
    parts = [f"`{name}` ({'every row' if n == len(df) else f'{n}/{len(df)} rows'}): "
             f"{RULES[name].meaning if name in RULES else 'not a declared rule'}"
             for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return ("the world's model read a tool result that reports an interruption or an error under "
            + "; ".join(parts) + " (harness/model_rule.py).")


def rules_text(width: int = 110, model_rule: str = "") -> str:
    """The rules under the capability table, from the declarations: the preamble, then each verdict's rule, and
    after the resume columns' the model's rule the rows were measured under (`model_rule_text`)."""
    lines = [PREAMBLE]
    for v in VERDICTS:
        lines += textwrap.wrap(v.rule, width, initial_indent=f"- {v.column:<14} = ",
                               subsequent_indent=" " * 19)
        if v.column == "repeats effect" and model_rule:
            lines += textwrap.wrap(model_rule, width, initial_indent=f"- {'model rule':<14} = ",
                                   subsequent_indent=" " * 19)
    lines += textwrap.wrap(MEDIANS_RULE, width, initial_indent="- ", subsequent_indent="  ")
    return "\n".join(lines) + "\n"


CAPABILITY_RULES = rules_text()


# --- text, made from the verdicts ---------------------------------------------------------------------------

def text(v: Verdict) -> str:
    """A verdict as the table writes it: `yes`, `no (4/6: 2 hung in stop, 1 went on at ...); hangs (3/7)`,
    `partly (3/4: 1 hung in resume)`, `yes (2/9)` (repeats effect), `no (1/9)` (orphans clean)."""
    if v.column == "can abort":
        return _abort_text(v)
    if v.column == "repeats effect":
        return "no" if v.word == Word.NO else f"yes ({v.k}/{v.n})"
    if v.word in (Word.NOT_APPLICABLE, Word.NO_RESUME, Word.YES):
        return str(v.word)
    if v.column == "orphans clean":
        return f"no ({v.k}/{v.n})"
    why = ", ".join(f"{n} {what}" for what, n in v.causes)
    if v.word == Word.NO and not why:
        return "no"
    return f"{v.word} ({v.k}/{v.n}" + (f": {why}" if why else "") + ")"


def _abort_text(v: Verdict) -> str:
    hangs = f"hangs ({v.hung}/{v.measured})"
    if v.word != Word.NO:
        return hangs if v.word == Word.HANGS else str(v.word)
    place = "; ".join(v.places) if len(v.places) <= 2 else ""
    why = [", ".join(f"{n} {what}" for what, n in v.causes)] if v.causes else []
    if why and v.went_on:
        why.append(f"{v.went_on} went on" + (f" at {place}" if place else ""))
    elif place:
        why.append(place)
    return f"no ({v.k}/{v.n}" + (f": {', '.join(why)}" if why else "") + ")" + (f"; {hangs}" if v.hung else "")


def capability_verdicts(g) -> dict[str, Verdict]:
    """One adapter x mode's verdicts, by column, over every trial but the skipped and those with nothing to stop."""
    return {v.column: v.judge(g) for v in VERDICTS}


def capability_row(g) -> dict[str, Any]:
    """One adapter x mode's verdicts as the table writes them."""
    return {column: text(v) for column, v in capability_verdicts(g).items()}


def verdict_facts(g) -> dict[str, list[Any]]:
    """Per verdict, the per-trial facts its word is decided by: boolean Series over the trials it reads (True: the
    bad case: did not abort, hung, not resumed clean, ...). `stopbench compare` tests these, not the words, for a
    difference beyond the run-to-run spread."""
    rows = _judged(g)
    judged = rows[stop_judged(rows)]
    res = rows[resumed(rows)]
    dup = numbers(rows, "resume_duplicate_effects")
    landed = g[is_measured(g) & (numbers(g, "effects_after_stop") > 0)]
    return {
        "can abort": [did_not_stop(judged), rows["status"] == "hung"],
        "state kept": [~state_kept(res)],
        "can resume": [~resume_reached_end(res)],
        "repeats effect": [(dup > 0)[dup.notna()]],
        "compensated": [~(numbers(landed, "effects_leaked") == 0)],
        "orphans clean": [numbers(g[is_measured(g)], "orphans") > 0],
    }


def capability_rows(df) -> dict[tuple[str, str], dict[str, Verdict]]:
    """(adapter, mode) -> its verdicts, over the rows with mitigation none: computed once per report, read by the
    capability table, the scorecard, the side-by-side and the findings."""
    base = df[df["mitigation"] == "none"]
    return {key: capability_verdicts(g) for key, g in base.groupby(list(BUTTON), sort=True)}


def texts(verdicts: dict[str, Verdict]) -> dict[str, str]:
    """A button's verdicts as the table writes them."""
    return {column: text(v) for column, v in verdicts.items()}
