"""`stopbench agree DIR --reps-rule agree`: what running only the repetitions the rule asks for would have
changed in a run's results: trials saved, and every capability verdict, claim verdict, best button (or best set)
and scorecard share beyond its interval that would read differently (the rule must change none:
harness/results/repetitions.py). Verdicts are compared by their words, as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.results.capability import capability_rows
from harness.results.cells import frame
from harness.results.claims import judge, load_claims
from harness.results.judgement import Word, tied
from harness.results.repetitions import FIRST, kept_by_rule
from harness.results.rows import raw_files, read_rows
from harness.results.scorecard import RANK, scorecard
from harness.scenario import load_scenarios


def effect(rows: list[dict[str, Any]], scenarios: dict) -> dict[str, Any]:
    kept = kept_by_rule(rows, scenarios)
    before, after = frame(rows), frame(kept)
    cap_before, cap_after = capability_rows(before), capability_rows(after)
    changed = []
    for key, verdicts in cap_before.items():
        for column, verdict in verdicts.items():
            new = cap_after.get(key, {}).get(column)
            if new is None or verdict.word != new.word:
                changed.append({"what": f"{' '.join(key)}: {column}", "all": str(verdict), "agree": str(new)})
    changed += scorecard_changes(scorecard(before, cap_before), scorecard(after, cap_after))
    claims = []
    for claim in load_claims():
        frameworks = set(before["framework"])
        if claim.get("framework") not in frameworks:
            continue
        v_all, v_agree = Word(judge(claim, before)[0]), Word(judge(claim, after)[0])
        claims.append(claim["id"])
        if v_all != v_agree:
            changed.append({"what": f"claim {claim['id']}", "all": v_all, "agree": v_agree})
    later = [r for r in rows if r["rep"] >= FIRST]
    return {"rows": len(rows), "kept": len(kept), "later": len(later),
            "later_kept": sum(1 for r in kept if r["rep"] >= FIRST),
            "cpu_s": sum(r.get("subject_cpu_s") or 0 for r in rows),
            "cpu_s_kept": sum(r.get("subject_cpu_s") or 0 for r in kept),
            "verdicts": sum(len(v) for v in cap_before.values()), "claims": len(claims), "changed": changed}


def scorecard_changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What differs between two scorecards: a framework's best set, and a best button's ranking share whose two
    values are not tied (beyond the interval)."""
    out = []
    other = {c["framework"]: c for c in after}
    for c in before:
        a = other.get(c["framework"])
        if a is None:
            out.append({"what": f"{c['framework']}: scorecard", "all": "ranked", "agree": "not measured"})
            continue
        names = [", ".join(f"{ad}/{m}" for ad, m in x["best_set"]) for x in (c, a)]
        if names[0] != names[1]:
            out.append({"what": f"{c['framework']}: best button", "all": names[0], "agree": names[1]})
        buttons = {(b["adapter"], b["mode"]): b for b in a["buttons"]}
        for b in c["buttons"]:
            twin = buttons.get((b["adapter"], b["mode"]))
            if not b["best"] or twin is None:
                continue
            for key in RANK:
                x, y = b["measured"][key], twin["measured"][key]
                if not tied(x, y):
                    out.append({"what": f"{b['adapter']} {b['mode']}: {key}", "all": f"{x.k}/{x.n}",
                                "agree": f"{y.k}/{y.n}"})
    return out


def report(folder: Path) -> str:
    rows, _ = read_rows(raw_files(folder))
    e = effect(rows, load_scenarios())
    saved = e["rows"] - e["kept"]
    lines = [f"# stopbench agree --reps-rule agree: {folder}", "",
             f"Of {e['rows']} trials, {e['later']} are repetitions past the first {FIRST} of their cell; the rule "
             f"would have run {e['later_kept']} of those: {saved} trials ({100 * saved / max(e['rows'], 1):.1f}%) "
             f"and {e['cpu_s'] - e['cpu_s_kept']:.0f} of {e['cpu_s']:.0f} subject CPU-s fewer.",
             f"Capability verdicts ({e['verdicts']}), claims ({e['claims']}), best buttons and their ranking shares "
             f"(beyond the interval) that would read differently: {len(e['changed'])}."]
    if e["changed"]:
        lines += ["", "| verdict | every repetition | under the rule |", "|---|---|---|"]
        lines += [f"| {c['what']} | {c['all']} | {c['agree']} |" for c in e["changed"]]
    return "\n".join(lines) + "\n"
