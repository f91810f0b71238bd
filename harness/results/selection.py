"""What a trial cell is and which rows a table reads, defined once for every reader of rows.

A trial cell is a trial but its repetition: its repetitions should agree (`stopbench agree`), and two runs are
compared cell by cell (`stopbench compare`, the history). Readers that group by a part of the cell take that
part by name below. The filters take one row (a dict: a bool) or a DataFrame of rows (a mask of it).
"""

from __future__ import annotations

from typing import Any

from harness.tools.mcp_launch import DEFAULT_LAUNCH, tool_label
from harness.vocabulary import IN_PROCESS, Event

#: a trial's status (harness/results/metrics.py `status`), in the order tables count them
STATUSES = ("ok", "hung", "failed", "runaway", "skipped")
#: one framework's stop button: a line of the summary, the capability table and the scorecard
BUTTON = ("adapter", "mode")
#: a button with the harness-side mitigation it ran with: a line of `stopbench compare` and summary.csv
BUTTON_MITIGATION = (*BUTTON, "mitigation")
#: the moment of the job the stop was pressed at (the time-anchored table and the orphan matrix take every
#: tool style of it together)
MOMENT = ("scenario", "offset")
#: the conditions a button was pressed under in the main matrix (where every MCP server is launched directly):
#: `stopbench compare` cuts both sides down to the ones they share
CONDITION = (*MOMENT, "tool_style")
#: a trial but its repetition, in trial_id's order (a host crash trial is a cell of its own: it shares the
#: closing host's conditions and measures other fields; so is each MCP launch variant, each provider, each
#: billing profile the world played, and each serving path)
CELL = (*BUTTON, "scenario", "scenario_hash", "offset", "tool_style", "mcp_launch", "mitigation", "host", "provider",
        "billing_profile", "serve_path")


def tools_shown(rows: Any) -> Any:
    """The tool style as a table names it: `mcp+<launch>` for an MCP launch variant (one row: its text; a
    DataFrame: a column of them), from `tool_style` and `mcp_launch` (harness/tools/mcp_launch.py tool_label)."""
    if not isinstance(rows, dict):
        return rows.apply(lambda r: tools_shown(r.to_dict()), axis=1) if len(rows) else rows.get("tool_style")
    launch = rows.get("mcp_launch")
    return tool_label(str(rows.get("tool_style")), launch if isinstance(launch, str) else DEFAULT_LAUNCH)


def without(key: tuple[str, ...], *names: str) -> tuple[str, ...]:
    """`key` less `names`, in its order: a cell read where some of its fields are the same in every row."""
    missing = [n for n in names if n not in key]
    if missing:
        raise KeyError(f"{missing} not in {key}")
    return tuple(k for k in key if k not in names)


def is_ok(rows: Any) -> Any:
    """Trials that ended ok: the tables' medians are over these."""
    return rows["status"] == "ok"


def is_measured(rows: Any) -> Any:
    """Every trial but the skipped (the job ended before the offset, or the mode cannot run that tool style)."""
    return rows["status"] != "skipped"


def is_unsupported(df: Any) -> Any:
    """Skipped trials of a mode and tool style the framework's release does not have yet (the contract's skip
    reason `unsupported in <package> <version>`; the history walks releases). A DataFrame's mask only."""
    return (df["status"] == "skipped") & df["reason"].astype(str).str.contains("unsupported in")


def went_wrong(rows: Any) -> Any:
    """Trials that hung, failed, ran away (any status but ok and skipped)."""
    return (rows["status"] != "ok") & (rows["status"] != "skipped")


def is_anchored(rows: Any, kind: str = "event") -> Any:
    """Trials whose stop was pressed at an event anchor (`event`) or at a planned time (`time`)."""
    return rows.get("offset_kind") == kind


def in_flight_at_stop(rows: Any) -> Any:
    """Trials stopped at an `effect_received` anchor: an effect's request had reached the world and was not
    committed yet when the stop was pressed (an effect in flight)."""
    prefix = f"on:{Event.EFFECT_RECEIVED}:"
    if isinstance(rows, dict):
        return str(rows.get("offset")).startswith(prefix)
    return rows["offset"].astype(str).str.startswith(prefix)


def is_late(rows: Any) -> Any:
    """Trials whose stop fired late (`trigger_precise` false): counted, left out of timing medians."""
    return rows["trigger_precise"] == False  # noqa: E712 (None: no stop, not late)


def in_main_matrix(rows: Any) -> Any:
    """The main matrix: a host that closes the agent, tools as the docs show them (the MCP server launched
    directly), the button pressed in-process (no server). The orphan matrix's rows (an MCP launch variant, a host
    crash) and served rows (harness/trial/serve/) share a main cell's scenario, offset and tool style, so every
    table, `compare` and `agree` tell them apart by this."""
    if not isinstance(rows, dict):  # a DataFrame: the rule below, row by row
        import pandas as pd

        return pd.Series([in_main_matrix(r) for r in rows.to_dict("records")], index=rows.index, dtype=bool)
    host, launch = rows.get("host"), rows.get("mcp_launch")
    return ((host if isinstance(host, str) else "close") == "close"
            and (launch if isinstance(launch, str) else DEFAULT_LAUNCH) == DEFAULT_LAUNCH
            and not is_served(rows))


def is_served(row: dict[str, Any]) -> bool:
    """The row's stop came through a server (harness/trial/serve/); rows written before serving are in-process."""
    served = row.get("serve_path")
    return (served if isinstance(served, str) else IN_PROCESS) != IN_PROCESS
