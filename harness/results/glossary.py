"""The site's glossary (glossary.html): every column a page shows, what it means and how its cell is written,
generated from the declarations behind the columns: the row fields (harness/results/schema.py), the
scorecard's shares (harness/results/judgement.py), the capability verdicts (harness/results/capability.py
VERDICTS) and the tables' counts (harness/results/selection.py). `header_links` links each table
header to its entry.
"""

from __future__ import annotations

import html
import re
from typing import Any

from harness.results import schema
from harness.results.capability import VERDICTS
from harness.results.judgement import CONFIDENCE
from harness.results.scorecard import SHARES, TOKEN_PERCENTILE
from harness.results.selection import STATUSES

#: how a cell is written, the same in every table
NOTATION = (
    ("v", "every trial behind the cell has this value"),
    ("m (lo..hi)", "the trials disagree: m is their median, lo..hi the smallest and largest value"),
    ("k/N", "k of the N trials where it applies (a share; the scorecard's cells link to the k trials)"),
    ("yes / no / partly (k/n: why)", "a capability verdict: all / none / k of the n trials, and why (the "
                                     "capability rules below)"),
    (schema.NO_VALUE, "nothing measured it (the trial never reached that step, or the field is newer than the "
                      "row): never a 0"),
)
COUNTS = {"trials": "trials behind the line, every status", "N": "trials behind the line (mitigation none)",
          "late stop": "trials whose stop fired late (trigger_precise false): counted, left out of timing medians",
          **{s: f"trials whose status is {s}" for s in STATUSES}}


def glossary_terms() -> list[dict[str, Any]]:
    """[{id, term, kind, meaning, detail}] in the page's order: the scorecard, the verdicts, the fields."""
    terms = []
    for s in SHARES:
        extra = (f" The cell also shows the {TOKEN_PERCENTILE}th percentile of tokens after the stop "
                 f"(p{TOKEN_PERCENTILE})." if s.key == "tokens" else "")
        terms.append({"id": f"s-{s.key}", "term": s.label, "kind": "scorecard share",
                      "meaning": f"k = trials that {s.counts_words}; N = {s.over_words}. Why: {s.why}.{extra}",
                      "detail": (f"read from the row fields; ranked by the mean over conditions of the share within "
                                 f"each, with its {CONFIDENCE:.0%} Wilson interval"), "links": list(s.fields)})
    for v in VERDICTS:
        terms.append({"id": f"c-{_id(v.column)}", "term": v.column, "kind": "capability verdict", "meaning": v.rule,
                      "detail": "", "links": []})
    for name, meaning in COUNTS.items():
        terms.append({"id": f"n-{_id(name)}", "term": name, "kind": "count", "meaning": meaning, "detail": "",
                      "links": []})
    for f in schema.FIELDS.values():
        how = {"median": "median over ok trials", "ratio": "k/N trials where it is true", "none": ""}[f.aggregation]
        detail = ", ".join(x for x in (
            f"field {f.name}", schema.TYPE_NAMES[f.type] + (" or null" if f.nullable else ""),
            "" if f.unit == "none" else f.unit, f"a cell is the {how}" if how else "",
            "" if f.better == "none" else f"{f.better} is better", f"group {f.group}") if x)
        terms.append({"id": f.name, "term": f.label or f.name, "kind": "row field", "meaning": f.meaning,
                      "detail": detail, "links": []})
    return terms


def notation() -> tuple[tuple[str, str], ...]:
    return NOTATION


def _id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _lookup() -> dict[str, str]:
    """Header text -> glossary id: fields by label and name, shares and verdicts and counts by their words."""
    ids: dict[str, str] = {}
    for t in reversed(glossary_terms()):  # the first entry of a term wins
        ids[t["term"]] = t["id"]
        if t["kind"] == "row field":
            ids[t["id"]] = t["id"]
    return ids


_IDS: dict[str, str] | None = None


def term_id(header: str) -> str | None:
    """The glossary entry of a column header: the term itself, else the longest term it starts or ends with
    (`tokens+ min..max`, `leaked (sum)`, `resume dup (sum)`)."""
    global _IDS
    if _IDS is None:
        _IDS = _lookup()
    if header in _IDS:
        return _IDS[header]
    words = header.split(" ")
    for n in range(len(words) - 1, 0, -1):
        for part in (" ".join(words[:n]), " ".join(words[-n:]), " ".join(words[1:n + 1])):
            if part in _IDS:
                return _IDS[part]
    return None


def header_links(table_html: str, root: str) -> str:
    """Each `<th>` whose text has a glossary entry, with a link to it."""
    def link(m: re.Match) -> str:
        text = html.unescape(m.group(2))
        found = term_id(text)
        if not found:
            return m.group(0)
        return (f'{m.group(1)}{m.group(2)} <a class="g" href="{root}glossary.html#{found}" '
                f'title="what this column means">?</a></th>')
    return re.sub(r"(<th[^>]*>)([^<]+)</th>", link, table_html)
