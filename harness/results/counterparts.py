"""The same framework in two languages, side by side: each adapter whose framework.toml names a `counterpart`
(LangGraph.js beside LangGraph, @openai/agents beside openai-agents), button by button, at the moments where
stop buttons differ most (MOMENTS).

Which button of one language is the closest to which of the other is data, not code: data/counterparts.yaml
(adapter -> {its mode: the counterpart's mode, or null when it has none}), checked on load against the framework
folders' declared stop modes. Every number is a cell of the tables (harness/results/cells.py) or a share of the
scorecard (harness/results/scorecard.py) over the same rows; what differs between two buttons is read off the
capability table's verdicts (harness/results/capability.py: their words, as data), never derived again here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT, Framework, discover
from harness.results import schema
from harness.results.cells import cell
from harness.results.scorecard import base_rows, trial_flags
from harness.results.selection import is_ok

PAIRINGS = ROOT / "data" / "counterparts.yaml"
#: (the moment's name, its scenario, its offset): the email in flight and the final answer streaming
MOMENTS = (("email in flight", "q3_report", "on:effect_received:email"),
           ("mid final answer", "q3_report", "on:token:40"))
#: the measured columns of a button at a moment, medians over its ok trials as every table takes them
FIELDS = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "lie_ms", "orphans",
          "resume_duplicate_effects")
#: the scorecard share a "resume ok" cell is the complement of (over the trials that resumed, hung ones too)
RESUME_REFUSED = "resume_refused"


class CounterpartError(ValueError):
    """data/counterparts.yaml is malformed or names a mode no framework folder declares; the message names the
    file, the adapter and the mode."""


@dataclass(frozen=True)
class Pairing:
    """One adapter beside its counterpart (the same framework in another language): `modes` maps each of the
    adapter's stop modes to the counterpart's closest one ("" when it has none)."""

    adapter: str
    counterpart: str
    modes: dict[str, str]
    primitives: dict[str, str]  # the adapter's mode -> what it presses (framework.toml [stop_modes])
    counterpart_primitives: dict[str, str]

    @property
    def unpaired(self) -> list[str]:
        """The counterpart's modes that no mode of the adapter is paired with, in their declared order."""
        return [m for m in self.counterpart_primitives if m not in self.modes.values()]


def load_pairings(path: Path | None = None, folders: list[Framework] | None = None) -> list[Pairing]:
    """The pairings, one per framework folder that names a counterpart, by adapter name. Raises CounterpartError
    (file, adapter, mode) when the file (`path`, default data/counterparts.yaml) is not a mapping of adapter ->
    {mode: mode or null}, names an adapter without a counterpart or a mode its adapter does not declare, or
    leaves one of the adapter's modes out."""
    path = path or PAIRINGS
    found = {f.name: f for f in (folders if folders is not None else discover(ROOT))}
    try:
        data = yaml.safe_load(path.read_text()) if path.exists() else {}
    except yaml.YAMLError as e:
        raise CounterpartError(f"{path}: not valid YAML: {e}") from e
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise CounterpartError(f"{path}: expected a mapping of adapter -> {{its mode: the counterpart's mode}}, "
                               f"got {type(data).__name__}")
    out = []
    for adapter, modes in data.items():
        where = f"{path}: {adapter}"
        f = found.get(adapter) if isinstance(adapter, str) else None
        if f is None or not f.counterpart:
            paired = ", ".join(sorted(n for n, fw in found.items() if fw.counterpart)) or "none"
            raise CounterpartError(f"{where}: no framework folder of that name names a counterpart in its "
                                   f"framework.toml (those that do: {paired})")
        own = _modes(f, f.name)
        other = _modes(found[f.counterpart], f.counterpart)
        if not isinstance(modes, dict):
            raise CounterpartError(f"{where}: expected a mapping of its mode -> {f.counterpart}'s mode (or null), "
                                   f"got {modes!r}")
        for mode, theirs in modes.items():
            if mode not in own:
                raise CounterpartError(f"{where}: {mode!r} is not a stop mode of {adapter} (its modes: "
                                       f"{', '.join(own)})")
            if theirs is not None and theirs not in other:
                raise CounterpartError(f"{where}: {mode}: {theirs!r} is not a stop mode of {f.counterpart} (its "
                                       f"modes: {', '.join(other)}; null when it has no counterpart)")
        missing = [m for m in own if m not in modes]
        if missing:
            raise CounterpartError(f"{where}: {', '.join(missing)} not listed (every mode of {adapter} is paired "
                                   f"with a mode of {f.counterpart}, or with null when it has none)")
        out.append(Pairing(adapter, f.counterpart, {m: modes[m] or "" for m in own}, own, other))
    unlisted = sorted(n for n, fw in found.items() if fw.counterpart and n not in data)
    if unlisted:
        raise CounterpartError(f"{path}: {', '.join(unlisted)} names a counterpart in its framework.toml but has no "
                               "pairing of its modes here")
    return sorted(out, key=lambda p: p.adapter)


def _modes(f: Framework, name: str) -> dict[str, str]:
    """The stop modes (-> primitive) of the framework's own adapter (not a variant's)."""
    d = next((d for d in f.declarations if d.name == name), None)
    return dict(d.stop_modes) if d else {}


def differs(caps: dict[tuple[str, str], dict[str, Any]], a: tuple[str, str], b: tuple[str, str]) -> list[str]:
    """The capability verdicts (their names, in the table's order) whose words differ between buttons a and b;
    [] when either was not measured."""
    if a not in caps or b not in caps:
        return []
    return [k for k, v in caps[a].items() if k not in caps[b] or v.word != caps[b][k].word]


def moment_cells(rows) -> dict[str, str]:
    """One button at one moment: how many trials and how many ok, each FIELDS median over the ok ones (the
    schema's cell), and `resume ok` as k/N of the trials that resumed (the scorecard's resume share)."""
    ok = rows[is_ok(rows)]
    out = {"trials": f"{len(rows)} ({len(ok)} ok)" if len(rows) else schema.NO_VALUE}
    out.update({name: cell(ok, name) if len(ok) else schema.NO_VALUE for name in FIELDS})
    over, refused = trial_flags(rows)[RESUME_REFUSED] if len(rows) else (None, None)
    n = int(over.sum()) if over is not None else 0
    out["resume_ok"] = schema.ratio_text(n - int(refused.sum()), n) if n else schema.NO_VALUE
    return out


#: the columns of a moment's table, in order: (key of moment_cells, header)
COLUMNS = (("trials", "trials"), *((n, schema.label(n)) for n in FIELDS[:5]), ("resume_ok", "resume ok"),
           ("resume_duplicate_effects", schema.label("resume_duplicate_effects")))


def side_by_side(df, caps: dict[tuple[str, str], dict[str, Any]], pairings: list[Pairing]) -> list[dict[str, Any]]:
    """Per pairing whose two adapters both have rows: the buttons side by side (each mode with its primitive, the
    counterpart's closest, the verdicts that differ), and per moment each button's cells, over the tool styles
    both adapters measured (the rows the scorecard reads: mitigation none, skipped left out). `df`: the main
    matrix; `caps`: the report's capability rows."""
    base = base_rows(df)
    out = []
    for p in pairings:
        mine, theirs = base[base["adapter"] == p.adapter], base[base["adapter"] == p.counterpart]
        if mine.empty or theirs.empty:
            continue
        styles = sorted(set(mine["tool_style"]) & set(theirs["tool_style"]))
        buttons = []
        for mode, other in p.modes.items():
            diff = differs(caps, (p.counterpart, other), (p.adapter, mode)) if other else []
            buttons.append({"mode": mode, "primitive": p.primitives[mode], "counterpart_mode": other,
                            "counterpart_primitive": p.counterpart_primitives.get(other, ""), "differs": diff,
                            "measured": (p.adapter, mode) in caps,
                            "counterpart_measured": (p.counterpart, other) in caps,
                            "verdicts": {k: (str(caps.get((p.counterpart, other), {}).get(k, schema.NO_VALUE)),
                                             str(caps.get((p.adapter, mode), {}).get(k, schema.NO_VALUE)))
                                         for k in diff}})
        groups: dict[str, list[str]] = {}  # the counterpart's mode -> the adapter's modes paired with it
        for mode, other in p.modes.items():
            if other:
                groups.setdefault(other, []).append(mode)
        order = [*groups.items(), *(("", [m]) for m, o in p.modes.items() if not o), *((m, []) for m in p.unpaired)]
        moments = []
        for name, scenario, offset in MOMENTS:
            at = base[(base["scenario"] == scenario) & (base["offset"] == offset) & base["tool_style"].isin(styles)]
            lines = []
            for other, modes in order:  # the counterpart's button, then each of the adapter's paired with it
                sides = [("counterpart", p.counterpart, other)] if other else []
                sides += [("adapter", p.adapter, m) for m in modes]
                for i, (side, adapter, mode) in enumerate(sides):
                    rows = at[(at["adapter"] == adapter) & (at["mode"] == mode)]
                    lines.append({"side": side, "first": i == 0, "adapter": adapter, "mode": mode,
                                  "cells": moment_cells(rows)})
            moments.append({"name": name, "scenario": scenario, "offset": offset, "lines": lines})
        out.append({"adapter": p.adapter, "counterpart": p.counterpart, "tool_styles": styles, "buttons": buttons,
                    "unpaired": [{"mode": m, "primitive": p.counterpart_primitives[m],
                                  "measured": (p.counterpart, m) in caps} for m in p.unpaired],
                    "moments": moments, "differs_line": differs_line(p, buttons)})
    return out


def differs_line(p: Pairing, buttons: list[dict[str, Any]]) -> str:
    """What differs, in one line: each paired button whose verdict words differ, with the verdicts on each
    side; the modes either side has alone."""
    parts = []
    for b in buttons:
        if not b["counterpart_mode"]:
            parts.append(f"{b['mode']} has no {p.counterpart} counterpart")
        elif not (b["measured"] and b["counterpart_measured"]):
            parts.append(f"{b['counterpart_mode']} vs {b['mode']}: not measured on both sides")
        elif b["differs"]:
            said = "; ".join(f"{k}: {py} vs {js}" for k, (py, js) in b["verdicts"].items())
            parts.append(f"{b['counterpart_mode']} vs {b['mode']}: {said}")
    parts += [f"{m} has no {p.adapter} counterpart" for m in p.unpaired]
    return ". ".join(parts) + "." if parts else "the paired buttons' verdicts read the same."
