"""Orphans as they happen in the wild: the MCP launch variants and the host crash, apart from the main matrix.

The main matrix (every table but this one) is the app as its docs show it: the MCP server started directly,
a host that closes the agent. The orphan matrix adds the process trees orphans come from in the wild
(harness/tools/mcp_launch.py) and a host that dies without cleanup (`--host crash`); its rows are read here,
framework x launch x {after close(), after a host crash}, and by the claim "orphans need a reaper".
"""

from __future__ import annotations

from typing import Any

from harness.results.cells import cells
from harness.results.judgement import Word
from harness.results.selection import BUTTON, MOMENT, in_main_matrix, is_measured, is_ok
from harness.tools.mcp_launch import LAUNCHES

#: read after close() and after a host crash: how many processes, their memory, their CPU
AFTER_CLOSE = ("orphans", "orphan_rss_bytes", "orphan_cpu_s")
AFTER_CRASH = ("crash_orphans", "crash_orphan_rss_bytes", "crash_orphan_cpu_s")


def orphan_rows(df):
    """The orphan matrix's rows: MCP tools (any launch), no mitigation, not skipped, in the cells (adapter x
    mode x scenario x offset) a launch variant or a host crash was measured in; there, the direct launch with a
    closing host is the main matrix's MCP rows."""
    import pandas as pd

    mcp = df[(df["tool_style"] == "mcp") & (df["mitigation"] == "none") & is_measured(df)]
    variants = mcp[~in_main_matrix(mcp)]
    keys = [*BUTTON, *MOMENT]  # every launch variant of the MCP tool style together
    cells_measured = set(map(tuple, variants[keys].values))  # noqa: C401
    keep = mcp[pd.Series([tuple(k) in cells_measured for k in mcp[keys].values], index=mcp.index, dtype=bool)]
    return keep.assign(host=keep.get("host", "close"))


def _orphaned(rows, field: str) -> str:
    vals = rows[field].dropna()
    return "-" if vals.empty else f"{int((vals > 0).sum())}/{len(vals)}"


def _not_ok(rows) -> str:
    """` (6 hung)`: the trials that did not end ok, by status."""
    counts = rows.loc[~is_ok(rows), "status"].value_counts()
    return f" ({', '.join(f'{n} {status}' for status, n in sorted(counts.items()))})" if len(counts) else ""


def _in_mb(rows):
    """Resident memory in MB (a process of ours is tens of MB: bytes read as 2.37117e+07)."""
    return rows.assign(**{f: (rows[f] / 1e6).round(1) for f in rows.columns if f.endswith("_rss_bytes")})


def _mb(column: str) -> str:
    return column.replace("_rss_bytes", " RSS MB")


def orphan_table(df):
    """framework (adapter) x launch: after close() and after a host crash, the trials that left processes
    (k/n), how many (median), their memory (MB) and CPU seconds: medians over every trial that measured them.
    A trial whose stop hung still left what the harness reaped, so its processes count (its status is named
    beside the trials); a crash that never came (the stop hung first) measured nothing."""
    import pandas as pd

    rows = orphan_rows(df)
    out: list[dict[str, Any]] = []
    order = {launch: i for i, launch in enumerate(LAUNCHES)}
    groups = rows.groupby(["adapter", "mcp_launch"])
    for (adapter, launch), g in sorted(groups, key=lambda kv: (kv[0][0], order[kv[0][1]])):
        line: dict[str, Any] = {"adapter": adapter, "launch": launch}
        for host, fields, label in (("close", AFTER_CLOSE, "after close"), ("crash", AFTER_CRASH, "after crash")):
            h = g[g["host"] == host]
            line[f"{label}: trials"] = f"{len(h)}" + _not_ok(h)
            line[f"{label}: left processes"] = _orphaned(h, fields[0])
            measured = h[h[fields[0]].notna()]
            line.update({f"{label}: {_mb(k)}": v for k, v in cells(_in_mb(measured), fields).items()} if len(measured)
                        else {f"{label}: {_mb(k)}": "-" for k in fields})
        out.append(line)
    return pd.DataFrame(out)


def orphans_seen(df, hosts: tuple[str, ...] = ("close", "crash")) -> tuple[str, str]:
    """The claim "orphan processes need a reaper", over every condition: the main matrix after close(), and
    the orphan matrix's launch variants after close() and (with "crash" in `hosts`) after a host crash.
    Confirmed when any trial left a process the harness had to reap; the evidence names which condition, for
    which adapter and mode."""
    main = df[in_main_matrix(df) & (df["mitigation"] == "none") & is_measured(df)]
    parts = []
    total = orphaned = 0
    main_orph = main[main["orphans"].fillna(0) > 0]
    total += int(main["orphans"].notna().sum())
    orphaned += len(main_orph)
    who = sorted({f"{a}/{m}/{t}" for a, m, t in main_orph[[*BUTTON, "tool_style"]].values})
    parts.append(f"main matrix after close(): {len(main_orph)}/{int(main['orphans'].notna().sum())}"
                 + (f" ({', '.join(who)})" if who else ""))
    wild = orphan_rows(df)
    wild = wild[~in_main_matrix(wild)]
    for host, field, label in (("close", "orphans", "after close()"), ("crash", "crash_orphans", "after a host crash")):
        h = wild[wild["host"] == host] if host in hosts else wild.iloc[0:0]
        if h.empty:
            continue
        hit = h[h[field].fillna(0) > 0]
        total += int(h[field].notna().sum())
        orphaned += len(hit)
        by = sorted({f"{a}/{launch}" for a, launch in hit[["adapter", "mcp_launch"]].values})
        parts.append(f"launch variants {label}: {len(hit)}/{int(h[field].notna().sum())}"
                     + (f" ({', '.join(by)})" if by else ""))
    if not total:
        return Word.NOT_MEASURED, "no trial measured its orphans"
    verdict = Word.CONFIRMED if orphaned else Word.REFUTED
    return verdict, f"{orphaned}/{total} trials left processes that had to be reaped: " + "; ".join(parts)
