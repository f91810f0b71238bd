"""`stopbench compare OLD NEW --judgements`: what two reports concluded differently from their rows: each framework's
best button (or best set), each capability verdict's word, each claim's verdict, with the cause of each move.

Reads the two folders' summary.json, of format 2: every verdict stored as data (its word, k, n, interval). One
written before (format 1: the capability table as text) is refused; `python -m harness.migrate_summary` turns it
into format 2 once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.model_rule import RULE_BEFORE, RULES
from harness.results.capability import VERDICT
from harness.results.judgement import Word

#: summary.json's layout; a reader refuses a newer one
SUMMARY_FORMAT = 2


class JudgementDiffError(ValueError):
    """A summary.json is missing, unreadable or of an unknown format; the message names the file."""


def load_summary(folder: Path) -> dict[str, Any]:
    path = folder / "summary.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise JudgementDiffError(f"{path}: cannot read a report summary ({e}); run `stopbench report {folder}`") from e
    fmt = data.get("format", 1)
    if fmt == 1:
        raise JudgementDiffError(f"{path}: format 1 (verdicts as text); migrate it once: python -m "
                                 f"harness.migrate_summary {path} <folder>/summary.json")
    if fmt != SUMMARY_FORMAT:
        raise JudgementDiffError(f"{path}: format {fmt!r} is not one this stopbench reads ({SUMMARY_FORMAT})")
    return data


def words(summary: dict[str, Any]) -> dict[str, dict[str, Word]]:
    return {key: {column: Word(v["word"]) for column, v in verdicts.items()}
            for key, verdicts in summary.get("capability_verdicts", {}).items()}


def best(summary: dict[str, Any]) -> dict[str, list[str]]:
    """framework -> its best button, or its best set, as adapter/mode."""
    out = {}
    for card in summary.get("scorecard", []):
        if "best_set" in card:
            out[card["framework"]] = [f"{a}/{m}" for a, m in card["best_set"]]
        else:
            out[card["framework"]] = [f"{card['best']['adapter']}/{card['best']['mode']}"]
    return out


def _buttons(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{b['adapter']}/{b['mode']}": b for c in summary.get("scorecard", []) for b in c["buttons"]}


def _share(b: dict[str, Any] | None, key: str) -> str:
    if not b or key not in b.get("shares", {}):
        return "?"
    s = b["shares"][key]
    return f"{s['k']}/{s['n']}" + (f" ({s['lo']:.0%}-{s['hi']:.0%})" if "lo" in s else "")


def best_cause(old: list[str], new: list[str], new_buttons: dict[str, dict[str, Any]],
               old_buttons: dict[str, dict[str, Any]]) -> str:
    """Why the best button moved: the old and the new best's "did not stop" before and after, and whether the old
    best is still ranked (measured under every condition) and tied."""
    parts = []
    for name in dict.fromkeys([*old, *new]):
        b, was = new_buttons.get(name), old_buttons.get(name)
        parts.append(f"{name}: did not stop {_share(was, 'did_not_stop')} -> {_share(b, 'did_not_stop')}"
                     + ("" if b is None else f", ranked {'yes' if b.get('ranked') else 'no'}"))
    return ("ranked over the conditions every button covers, shares read per condition (the old rule ranked only the "
            "buttons with the most event-anchored trials, so a third repetition decided which were ranked), time "
            "anchors judged, nothing-to-stop trials left out, ties within the interval kept: " + "; ".join(parts))


#: the cause of a judgement of a button or framework the old report has no rows of
NEW_IN_THIS_REPORT = "new in this report: the old one has no rows of it"


def model_rules(summary: dict[str, Any]) -> dict[str, int]:
    """The model rules the judged rows were measured under; a summary without them was written before the world had
    rules, when its model counted results (`RULE_BEFORE`, as rows of then are read)."""
    return summary.get("model_rules") or {RULE_BEFORE.name: summary.get("trials", {}).get("main", 0)}


def rule_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The cause a resume verdict gets when the world's model read tool results by another rule; "" if the same."""
    was, now = sorted(model_rules(old)), sorted(model_rules(new))
    if was == now:
        return ""
    meaning = "; ".join(f"`{n}`: {RULES[n].meaning}" if n in RULES else f"`{n}`" for n in now)
    return f"the world's model rule changed from {', '.join(was)} to {', '.join(now)} ({meaning})"


def verdict_cause(column: str, button: dict[str, Any] | None, remeasured: bool = False, rule_moved: str = "") -> str:
    """Why a capability verdict's word moved, from what the new judgement read, and whether the rows are others."""
    of_the_rule = []
    if rule_moved and column in VERDICT and VERDICT[column].reads_resume:
        of_the_rule.append(rule_moved)
    nothing = (button or {}).get("shares", {}).get("nothing_to_stop", {}).get("k", 0)
    if nothing:
        of_the_rule.append(f"{nothing} trial(s) with nothing left to stop left out")
    if column == "can abort" and (button or {}).get("time_judged"):
        of_the_rule.append(f"{button['time_judged']} time-anchored trial(s) whose stop fired on time judged too")
    if not of_the_rule:
        of_the_rule.append("the rule reads the same predicate as the scorecard now")
    return "; ".join((["its rows were measured again"] if remeasured else []) + of_the_rule)


CLAIM_CAUSES = {
    "stops_effects_in_flight": "judged on whether the cancel reached the tool's request before the service "
                               "committed (effects_in_flight_client_gone), not on whether the service committed",
    "no_abort_and_no_resume": "\"state dropped\" judged on state kept (resume reached the end without asking a "
                              "completed turn again); buttons named by adapter and mode, never pooled",
    "resumes_cleanly": "trials with nothing left to stop left out; buttons named by adapter and mode",
}


def claim_cause(rule: str) -> str:
    return CLAIM_CAUSES.get(rule, "trials with nothing left to stop left out; time anchors judged as the scorecard "
                                  "judges them")


def measured_again(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """The two reports read different rows (their trial counts differ)."""
    return bool(old.get("trials") != new.get("trials"))


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Every judgement that moved: {what, old, new, cause}."""
    out = []
    old_best, new_best = best(old), best(new)
    old_buttons, new_buttons = _buttons(old), _buttons(new)
    for fw in sorted(set(old_best) | set(new_best)):
        a, b = old_best.get(fw, []), new_best.get(fw, [])
        if a != b:
            out.append({"what": f"{fw}: best button", "old": " = ".join(a) or "-", "new": " = ".join(b) or "-",
                        "cause": best_cause(a, b, new_buttons, old_buttons) if a else NEW_IN_THIS_REPORT})
    old_words, new_words = words(old), words(new)
    old_verdicts, new_verdicts = old.get("capability_verdicts", {}), new.get("capability_verdicts", {})
    remeasured, rule_moved = measured_again(old, new), rule_change(old, new)
    for key in sorted(set(old_words) | set(new_words)):
        for column in dict.fromkeys([*old_words.get(key, {}), *new_words.get(key, {})]):
            a, b = old_words.get(key, {}).get(column), new_words.get(key, {}).get(column)
            if a != b:
                verdict, was = new_verdicts.get(key, {}).get(column), old_verdicts.get(key, {}).get(column)
                out.append({"what": f"{key}: {column}", "old": was["text"] if was else str(a or "-"),
                            "new": verdict["text"] if verdict else str(b or "-"),
                            "cause": verdict_cause(column, new_buttons.get(key), remeasured, rule_moved)
                            if key in old_verdicts else NEW_IN_THIS_REPORT})
    old_claims = {c["id"]: c for c in old.get("claims", [])}
    for c in new.get("claims", []):
        was = old_claims.get(c["id"])
        if was is None:
            out.append({"what": f"claim {c['id']}", "old": "-", "new": c["verdict"],
                        "cause": "a new claim: the article's thesis and table, judged over every framework"})
        elif was["verdict"] != c["verdict"]:
            out.append({"what": f"claim {c['id']}", "old": was["verdict"], "new": c["verdict"],
                        "cause": claim_cause(c["rule"])})
    return out


def compare_judgements(old_dir: Path, new_dir: Path) -> str:
    """Markdown: every best button, capability verdict and claim whose conclusion differs, with its cause."""
    old, new = load_summary(old_dir), load_summary(new_dir)
    moved = diff(old, new)
    rows = ("" if not measured_again(old, new) else
            f" The two reports read different rows ({old.get('trials', {}).get('rows', '?')} of the main and orphan"
            f" matrices, then {new.get('trials', {}).get('rows', '?')}):"
            " a verdict of a button measured in both can move with its rows as well as with the rule.")
    lines = [f"# stopbench compare --judgements: {old_dir} -> {new_dir}", "",
             f"{len(moved)} judgement(s) moved: best buttons, capability verdicts (by their words) and claims." + rows,
             "",
             "| what | old | new | cause |", "|---|---|---|---|"]
    lines += [f"| {m['what']} | {m['old']} | {m['new']} | {m['cause']} |".replace("\n", " ") for m in moved]
    return "\n".join(lines) + "\n"
