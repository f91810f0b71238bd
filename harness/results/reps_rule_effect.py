"""`stopbench agree DIR --reps-rule agree`: what running only the repetitions the rule asks for would have
changed in a run's results: trials saved, and every capability verdict and claim verdict that would read
differently (the rule must change none: harness/results/repetitions.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.results.capability import capability_rows
from harness.results.cells import frame
from harness.results.claims import judge, load_claims
from harness.results.repetitions import FIRST, kept_by_rule
from harness.results.rows import raw_files, read_rows
from harness.scenario import load_scenarios


def verdict_word(text: Any) -> str:
    """A verdict without its counts: `no (3/48: 2 hung in stop)` -> `no`."""
    return re.split(r"[ (;]", str(text), maxsplit=1)[0]


def effect(rows: list[dict[str, Any]], scenarios: dict) -> dict[str, Any]:
    kept = kept_by_rule(rows, scenarios)
    before, after = frame(rows), frame(kept)
    cap_before, cap_after = capability_rows(before), capability_rows(after)
    changed = []
    for key, verdicts in cap_before.items():
        for column, text in verdicts.items():
            new = cap_after.get(key, {}).get(column)
            if verdict_word(text) != verdict_word(new):
                changed.append({"what": f"{' '.join(key)}: {column}", "all": text, "agree": new})
    claims = []
    for claim in load_claims():
        frameworks = set(before["framework"])
        if claim.get("framework") not in frameworks:
            continue
        v_all, v_agree = judge(claim, before)[0], judge(claim, after)[0]
        claims.append(claim["id"])
        if v_all != v_agree:
            changed.append({"what": f"claim {claim['id']}", "all": v_all, "agree": v_agree})
    later = [r for r in rows if r["rep"] >= FIRST]
    return {"rows": len(rows), "kept": len(kept), "later": len(later),
            "later_kept": sum(1 for r in kept if r["rep"] >= FIRST),
            "cpu_s": sum(r.get("subject_cpu_s") or 0 for r in rows),
            "cpu_s_kept": sum(r.get("subject_cpu_s") or 0 for r in kept),
            "verdicts": sum(len(v) for v in cap_before.values()), "claims": len(claims), "changed": changed}


def report(folder: Path) -> str:
    rows, _ = read_rows(raw_files(folder))
    e = effect(rows, load_scenarios())
    saved = e["rows"] - e["kept"]
    lines = [f"# stopbench agree --reps-rule agree: {folder}", "",
             f"Of {e['rows']} trials, {e['later']} are repetitions past the first {FIRST} of their cell; the rule "
             f"would have run {e['later_kept']} of those: {saved} trials ({100 * saved / max(e['rows'], 1):.1f}%) "
             f"and {e['cpu_s'] - e['cpu_s_kept']:.0f} of {e['cpu_s']:.0f} subject CPU-s fewer.",
             f"Capability verdicts ({e['verdicts']}) and claims ({e['claims']}) that would read differently: "
             f"{len(e['changed'])}."]
    if e["changed"]:
        lines += ["", "| verdict | every repetition | under the rule |", "|---|---|---|"]
        lines += [f"| {c['what']} | {c['all']} | {c['agree']} |" for c in e["changed"]]
    return "\n".join(lines) + "\n"
