"""`stopbench agree DIR`: do a run's repetitions agree? The reproducibility figures of one result folder.

A trial cell (adapter x mode x scenario x offset x tool style x mitigation) runs several repetitions. At an
event anchor the world freezes until the stop, so whatever the world decides is the same every time; a
cell whose repetitions still disagree shows where the framework races its own stop (tokens read until the
loop notices, parallel calls sent just before or after the press, a checkpoint written on another thread).
This counts such cells per adapter and per field, and names the most frequent ones, so a reader sees how
far a count can be trusted and a maintainer sees where the race is.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.billing import DEFAULT_PROFILE
from harness.providers import DEFAULT_PROVIDER
from harness.results import schema
from harness.results.rows import raw_files, read_rows
from harness.results.selection import CELL, is_anchored, is_measured, tools_shown, without

#: what a repetition must reproduce: the status and every count and flag the tables show (not the stop's own
#: timing: trigger_delay_ms / trigger_precise are the harness's, and timings vary by nature)
FIELDS = ("status", *(f.name for f in schema.FIELDS.values() if f.source == "metrics" and f.label
                      and f.group != "trigger" and (f.unit == "count" or f.type is bool)))
#: what a cell is named by within its adapter (its host, provider, billing profile and scenario hash are added
#: apart, when not the default; an MCP launch is named with its tool style, `mcp+<launch>`)
NAMED_BY = without(CELL, "adapter", "scenario_hash", "host", "mcp_launch", "provider", "billing_profile")
#: the cell's fields named after NAMED_BY only when a row's value is not the one every row had before they existed
NAMED_APART = {"host": "close", "provider": DEFAULT_PROVIDER, "billing_profile": DEFAULT_PROFILE.name}


def _cell(row: dict[str, Any]) -> str:
    """A trial cell (harness/results/selection.py CELL) within its adapter, as the table names it."""
    apart = "".join(f" {k}:{row[k]}" for k, usual in NAMED_APART.items() if row.get(k) not in (None, usual))
    return " ".join(tools_shown(row) if k == "tool_style" else str(row.get(k)) for k in NAMED_BY) + (
        apart) + f" #{row.get('scenario_hash')}"


def disagreeing_fields(rows: list[dict[str, Any]]) -> list[str]:
    """The FIELDS on which these repetitions of one cell differ."""
    return [f for f in FIELDS if len({json.dumps(r.get(f)) for r in rows}) > 1]


def agreement(rows: list[dict[str, Any]], anchors: str = "event") -> list[dict[str, Any]]:
    """Per adapter: cells with 2+ repetitions, those whose repetitions agree on every FIELD, and per field
    the cells that disagree on it (skipped trials left out)."""
    cells: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if is_measured(r) and (anchors == "all" or is_anchored(r, anchors)):
            cells[r["adapter"]][_cell(r)].append(r)
    table = []
    for adapter in sorted(cells):
        repeated = {c: rs for c, rs in cells[adapter].items() if len(rs) > 1}
        split: Counter[str] = Counter()
        where: Counter[str] = Counter()
        agree = 0
        for cell, rs in repeated.items():
            differ = disagreeing_fields(rs)
            split.update(differ)
            agree += not differ
            if differ:
                where[cell.split(" #")[0]] += 1
        table.append({"adapter": adapter, "cells": len(repeated), "agree": agree, "fields": split,
                      "where": [c for c, _ in where.most_common(3)]})
    return table


def agreement_frame(df):
    """The report's section: one line per adapter (event-anchored trials)."""
    import pandas as pd

    rows = json.loads(df.to_json(orient="records"))
    return pd.DataFrame([{"adapter": t["adapter"], "cells": t["cells"],
                          "repetitions agree": f"{t['agree']} ({100 * t['agree'] / max(t['cells'], 1):.0f}%)",
                          "cells that disagree, by field": _fields(t) or "-"} for t in agreement(rows)])


def _fields(t: dict[str, Any]) -> str:
    ranked = sorted(t["fields"].items(), key=lambda kv: (-kv[1], schema.label(kv[0])))
    return ", ".join(f"{schema.label(f)} {n}" for f, n in ranked)


def report(folder: Path, anchors: str = "event") -> str:
    rows, _ = read_rows(raw_files(folder))
    table = agreement(rows, anchors)
    cells = sum(t["cells"] for t in table)
    agree = sum(t["agree"] for t in table)
    lines = [f"# stopbench agree: {folder} ({anchors}-anchored trials)", "",
             f"{agree} of {cells} trial cells ({100 * agree / max(cells, 1):.1f}%) have repetitions that agree on "
             "the status and every count and flag measured. Per adapter, and per field the cells whose "
             "repetitions disagree on it:", "",
             "| adapter | cells | agree | disagree on (cells) | e.g. |", "|---|---|---|---|---|"]
    for t in table:
        pct = 100 * t["agree"] / max(t["cells"], 1)
        lines.append(f"| {t['adapter']} | {t['cells']} | {t['agree']} ({pct:.0f}%) | {_fields(t) or '-'} | "
                     f"{'<br>'.join(t['where']) or '-'} |")
    return "\n".join(lines) + "\n"
