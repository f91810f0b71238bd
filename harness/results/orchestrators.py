"""The orchestrators' table: what a coding agent's CLI (or an SDK that runs one) left after each stop.

Census trials (an orchestrator CLI, harness/trial/census.py) count the run's processes 5 s and 30 s after the stop,
and the process the user started says how it ended (`exit_status`). Their rows are read here, adapter x stop mode x
scenario x MCP launch: how many trials left processes alive at 5 s and at 30 s (k/n), how many and their memory
(medians), the model asked again and effects that landed after the stop, the exit statuses seen, and resume's
repeats. The claim "orchestrators need a reaper" reads the same rows.
"""

from __future__ import annotations

from typing import Any

from harness.results import schema
from harness.results.cells import cell, numbers
from harness.results.judgement import Word
from harness.results.selection import BUTTON, is_measured, is_ok

#: the medians the table shows beside the survivor shares
MEDIANS = ("survivors_5s", "survivors_30s", "survivors_30s_rss_bytes", "llm_requests_after_stop",
           "tokens_after_stop", "effects_after_stop", "resume_duplicate_effects")
GROUP = (*BUTTON, "scenario", "mcp_launch")


def census_rows(df):
    """The trials that took a census (not skipped): the orchestrators' rows, whatever their status."""
    if "survivors_5s" not in df:
        return df.iloc[0:0]
    return df[is_measured(df) & numbers(df, "survivors_5s").notna()]


def _share(rows, field: str) -> str:
    vals = numbers(rows, field).dropna()
    return "-" if vals.empty else f"{int((vals > 0).sum())}/{len(vals)}"


def exit_statuses(rows) -> str:
    """The exit statuses seen, each with how many trials ended so: `0 x2, 129 x1`; `-` when none exited."""
    vals = numbers(rows, "exit_status").dropna().astype(int)
    if vals.empty:
        return "-"
    return ", ".join(f"{code} x{n}" for code, n in sorted(vals.value_counts().items()))


def orchestrator_table(df):
    """One line per adapter x mode x scenario x launch: trials (those not ok named), the shares alive at 5 s and
    30 s, then medians over every census trial (a hung stop's too: what it left was counted)."""
    import pandas as pd

    rows = census_rows(df)
    out: list[dict[str, Any]] = []
    for key, g in sorted(rows.groupby(list(GROUP), dropna=False), key=lambda kv: tuple(map(str, kv[0]))):
        line: dict[str, Any] = dict(zip(GROUP, key, strict=True))
        bad = g.loc[~is_ok(g), "status"].value_counts()
        line["trials"] = f"{len(g)}" + (f" ({', '.join(f'{n} {s}' for s, n in sorted(bad.items()))})"
                                        if len(bad) else "")
        line["left at 5 s"] = _share(g, "survivors_5s")
        line["left at 30 s"] = _share(g, "survivors_30s")
        mb = g.assign(survivors_30s_rss_bytes=(numbers(g, "survivors_30s_rss_bytes") / 1e6).round(1))
        line.update({("alive 30 s MB" if f.endswith("rss_bytes") else schema.label(f)): cell(mb, f) for f in MEDIANS})
        line["exit status"] = exit_statuses(g)
        out.append(line)
    return pd.DataFrame(out)


def orchestrators_need_a_reaper(df) -> tuple[str, str]:
    """Confirmed when any census trial had processes of its run alive 30 s after the stop (the CLI the user started
    long gone or not): nothing of the CLI's own would end them. The evidence names the adapters and modes."""
    rows = census_rows(df)
    measured = rows[numbers(rows, "survivors_30s").notna()]
    if measured.empty:
        return Word.NOT_MEASURED, "no trial counted its processes 30 s after the stop"
    left = measured[numbers(measured, "survivors_30s") > 0]
    who = sorted({f"{a}/{m}" for a, m in left[list(BUTTON)].values})
    verdict = Word.CONFIRMED if len(left) else Word.REFUTED
    return verdict, (f"{len(left)}/{len(measured)} census trials had processes of the run alive 30 s after the "
                     "stop" + (f" ({', '.join(who)})" if who else ""))
