"""Result rows -> tables (Markdown, CSV, HTML). Every cell is computed from raw rows; nothing is typed in.

A corrupt line in a raw file is listed in the report (file:line) and skipped; it never stops it.
"""

from __future__ import annotations

import html
import textwrap
from pathlib import Path
from typing import Any

from harness.clock import TRIGGER_TOLERANCE_MS
from harness.results import schema
from harness.results.cells import cells, frame, min_max, ratio_cell
from harness.results.rows import CorruptLine, raw_files, read_rows
from harness.scenario import DEFAULT_OBSERVE_MS

# the measured columns of each table, in order; labels and cells come from the schema
SUMMARY = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "stop_return_ms", "lie_ms",
           "threads_left", "orphans", "resume_ok", "resume_duplicate_effects")
BY_OFFSET = ("tokens_after_stop", "llm_requests_after_stop", "effects_in_flight", "effects_new", "effects_leaked",
             "lie_ms", "threads_left", "orphans", "resume_ok", "resume_duplicate_effects")
CAPABILITY = ("tokens_after_stop", "effects_leaked", "lie_ms", "cancel_tax_usd")


def _legend() -> str:
    """One line per column label, from the schema: the label, the field behind it and what it means."""
    out = []
    for f in schema.FIELDS.values():
        if f.label:
            out += textwrap.wrap(f"{f.label} ({f.name}): {f.meaning}", 110,
                                 initial_indent="- ", subsequent_indent="  ")
    return "\n".join(out) + "\n"


RULES = """\
How to read these tables
- One trial = adapter x stop mode x scenario x offset x tool style x mitigation x repetition; one row each.
- "After stop" = stamped by the world after the trial's `stop_called` mark and before `resume_started`.
""" + _legend() + f"""\
- Every trial is observed until its run is quiet and at least `observe_ms` (the observation floor,
  {DEFAULT_OBSERVE_MS:g} ms by default) after the stop and after resume: late work (a retry after a back-off)
  is counted and extends lie ms. A run still busy at the settle deadline after the floor is `runaway`: its
  counts are kept but cut there.
- Cells are medians over ok rows; `a..b` means the rows disagree (min..max); k/N counts the rows where it is
  true. Hung, failed, runaway and skipped rows are never counted as zeros: they are counted in their own
  columns and listed with their reasons; the capability table and the claims count them as "did not abort".
- "late stop": a stop that fired more than {TRIGGER_TOLERANCE_MS:g} ms after its moment (a loaded machine;
  `trigger_precise` false). Its counts stay; its timings (stop ms, lie ms, job_ended_ms) are left out of the medians.
"""


def load(out_dir: Path):
    rows, bad = read_rows(raw_files(out_dir))
    return frame(rows), bad


def summary(df) -> Any:
    """One line per adapter x stop mode."""
    import pandas as pd

    out = []
    for (adapter, mode), g in df.groupby(["adapter", "mode"], sort=True):
        ok = g[g["status"] == "ok"]
        out.append({
            "adapter": adapter, "mode": mode, "trials": len(g), "ok": len(ok),
            "hung": int((g["status"] == "hung").sum()), "failed": int((g["status"] == "failed").sum()),
            "runaway": int((g["status"] == "runaway").sum()), "skipped": int((g["status"] == "skipped").sum()),
            "late stop": int((g["trigger_precise"] == False).sum()), **cells(ok, SUMMARY),  # noqa: E712
        })
    return pd.DataFrame(out)


def by_offset(df) -> Any:
    """Event-anchored trials: one line per adapter x mode x scenario x offset x tool style."""
    import pandas as pd

    ev = df[(df["offset_kind"] == "event")]
    out = []
    keys = ["adapter", "mode", "scenario", "offset", "tool_style"]
    for key, g in ev.groupby(keys, sort=True):
        ok = g[g["status"] == "ok"]
        statuses = ", ".join(f"{s} {n}" for s, n in g["status"].value_counts().items())
        out.append({**dict(zip(keys, key, strict=True)), "trials": statuses, **cells(ok, BY_OFFSET)})
    return pd.DataFrame(out)


def time_spread(df) -> Any:
    """Time-anchored trials land at different points of the run: their spread is the point."""
    import pandas as pd

    tm = df[(df["offset_kind"] == "time") & (df["status"] == "ok")]
    out = []
    keys = ["adapter", "mode", "scenario", "offset"]
    for key, g in tm.groupby(keys, sort=True):
        out.append({**dict(zip(keys, key, strict=True)), "trials": len(g),
                    "late stop": int((g["trigger_precise"] == False).sum()),  # noqa: E712
                    **{f"{schema.label(n)} min..max": min_max(g[n]) for n in ("tokens_after_stop", "effects_leaked")},
                    f"{schema.label('trigger_delay_ms')} p50": f"{g['trigger_delay_ms'].median():.2f}"})
    return pd.DataFrame(out)


def capability(df) -> Any:
    """The article's capability table, measured: one line per adapter x stop mode (mitigation none)."""
    import pandas as pd

    from harness.results.claims import cancel_tax, capability_row

    base = df[df["mitigation"] == "none"]
    out = []
    for (adapter, mode), g in base.groupby(["adapter", "mode"], sort=True):
        ok = g[g["status"] == "ok"]
        out.append({"adapter": adapter, "mode": mode, "N": len(g), **capability_row(g),
                    **cells(ok.assign(cancel_tax_usd=cancel_tax(ok)), CAPABILITY)})
    return pd.DataFrame(out)


def claims_table(df) -> Any:
    import pandas as pd

    from harness.results.claims import judge, load_claims

    out = []
    for claim in load_claims():
        verdict, evidence = judge(claim, df)
        out.append({"claim": claim["claim"], "verdict": verdict, "decided by": evidence})
    return pd.DataFrame(out)


def mitigations(df) -> Any:
    """How much each mitigation recovers, on the cells measured with more than one mitigation."""
    import pandas as pd

    from harness.results.claims import cancel_tax

    ok = df[df["status"] == "ok"]
    keys = ["adapter", "mode", "scenario", "offset", "tool_style"]
    multi = ok.groupby(keys)["mitigation"].nunique()
    compared = multi[multi > 1].index
    if len(compared) == 0:
        return pd.DataFrame()
    sub = ok.set_index(keys).loc[compared].reset_index()
    sub = sub.assign(cancel_tax_usd=cancel_tax(sub))
    leaked, dup = schema.label("effects_leaked"), schema.label("resume_duplicate_effects")
    out = []
    for (adapter, mitigation), g in sub.groupby(["adapter", "mitigation"], sort=True):
        per_cell = g.groupby(["mode", "offset"])[["effects_leaked", "resume_duplicate_effects"]].max().fillna(0)
        clean = int(((per_cell["effects_leaked"] == 0) & (per_cell["resume_duplicate_effects"] == 0)).sum())
        out.append({"adapter": adapter, "mitigation": mitigation, "trials": len(g),
                    f"cells at 0 {leaked}, 0 {dup}": f"{clean}/{len(per_cell)}",
                    f"{leaked} (sum)": int(g["effects_leaked"].sum()),
                    f"{schema.label('effects_compensated')} (sum)": int(g["effects_compensated"].sum()),
                    f"resume {dup} (sum)": int(g["resume_duplicate_effects"].fillna(0).sum()),  # None: no resume
                    schema.label("resume_ok"): ratio_cell(g["resume_ok"]),
                    f"{schema.label('cancel_tax_usd')} (sum)": round(float(g["cancel_tax_usd"].sum()), 4)})
    return pd.DataFrame(out)


def mitigation_gaps(df) -> Any:
    """Cells where saga+idempotent still leaves a leak or a repeated effect: the row's own numbers say how."""
    ok = df[(df["status"] == "ok") & (df["mitigation"] == "saga+idempotent")]
    gaps = ok[(ok["effects_leaked"] > 0) | (ok["resume_duplicate_effects"].fillna(0) > 0)]
    cols = ["adapter", "mode", "scenario", "offset", "tool_style", "rep", "effects_after_stop",
            "effects_compensated", "effects_leaked", "resume_duplicate_effects", "trial_id"]
    return gaps[cols].sort_values(cols[:6]) if not gaps.empty else gaps


def problems(df) -> Any:
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return bad
    cols = ["adapter", "mode", "scenario", "offset", "tool_style", "rep", "status", "reason"]
    return bad[cols].sort_values(cols[:6])


def environments(df) -> Any:
    import pandas as pd

    out = []
    for adapter, g in df.groupby("adapter"):
        versions = g["versions"].iloc[-1] or {}
        out.append({"adapter": adapter, "versions": ", ".join(f"{k} {v}" for k, v in versions.items()) or "-",
                    "python": ", ".join(sorted(g["python"].astype(str).unique())),
                    "platform": ", ".join(sorted(g["platform"].astype(str).unique())),
                    "git": ", ".join(sorted(g["git_sha"].astype(str).str[:12].unique())),
                    "rows": len(g)})
    return pd.DataFrame(out)


def _md(df) -> str:
    if df is None or df.empty:
        return "_none_\n"
    return df.to_markdown(index=False) + "\n"


def write_report(raw_dir: Path, to: Path) -> list[Path]:
    df, bad = load(raw_dir)
    to.mkdir(parents=True, exist_ok=True)
    if df.empty:
        text = "# stopbench results\n\nNo result rows yet: run `nox` (or `stopbench run`) first.\n"
        text += _corrupt_md(bad)
        (to / "README.md").write_text(text)
        return [to / "README.md"]
    from harness.results.claims import CAPABILITY_RULES

    plots = write_plots(df, to)
    sections = [
        ("Capability table, measured", capability(df)),
        ("The article's claims, checked", claims_table(df)),
        ("Summary: each stop button", summary(df)),
        ("Mitigations: what the harness-side saga and idempotency keys recover", mitigations(df)),
        ("Where saga+idempotent does not reach 0 (leaked or repeated)", mitigation_gaps(df)),
        ("Event-anchored trials (deterministic: repetitions must agree)", by_offset(df)),
        ("Time-anchored trials (spread)", time_spread(df)),
        ("Trials that did not finish ok", problems(df)),
        ("Measured on", environments(df)),
    ]
    md = ["# stopbench results\n", f"{len(df)} trials from `{raw_dir}/raw/`. Regenerate with `nox -s report`.\n",
          "```\n" + RULES + "```\n"]
    for title, table in sections:
        md += [f"## {title}\n", _md(table)]
        if title.startswith("Capability"):
            md.append("```\n" + CAPABILITY_RULES + "```\n")
    md.append("## Plots\n")
    md += [f"![{p.stem}]({p.name})\n" for p in plots]
    md.append(_corrupt_md(bad))
    readme = to / "README.md"
    readme.write_text("\n".join(md))
    summary_csv = to / "summary.csv"
    sections[0][1].to_csv(summary_csv, index=False)
    rows_csv = to / "rows.csv"  # every stored field, in the schema's order; objects (versions, by kind) left out
    flat = df[[c for c in df.columns if c not in schema.FIELDS or schema.FIELDS[c].type is not dict]]
    flat.to_csv(rows_csv, index=False)
    page = to / "index.html"
    page.write_text(_html(sections, bad, len(df), plots))
    return [readme, summary_csv, rows_csv, page, *plots]


def _corrupt_md(bad: list[CorruptLine]) -> str:
    if not bad:
        return ""
    lines = "\n".join(f"- `{b}`" for b in bad)
    return f"## Unreadable result lines (skipped)\n\n{lines}\n"


def _html(sections, bad: list[CorruptLine], n: int, plots: list[Path]) -> str:
    parts = ["<!doctype html><meta charset=utf-8><title>stopbench results</title>",
             "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}th{background:#eee}</style>",
             f"<h1>stopbench results</h1><p>{n} trials.</p><pre>{html.escape(RULES)}</pre>"]
    for title, table in sections:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(table.to_html(index=False, escape=True) if table is not None and not table.empty
                     else "<p><i>none</i></p>")
    parts += [f'<h2>{html.escape(p.stem)}</h2><img src="{p.name}" style="max-width:100%">' for p in plots]
    if bad:
        parts.append("<h2>Unreadable result lines</h2><ul>" +
                     "".join(f"<li><code>{html.escape(str(b))}</code></li>" for b in bad) + "</ul>")
    return "\n".join(parts)


def write_plots(df, to: Path) -> list[Path]:
    """PNG plots, readable without the text: titles, units, legends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = df[(df["status"] == "ok") & (df["mitigation"] == "none")].copy()
    if ok.empty:
        return []
    ok["who"] = ok["adapter"] + " / " + ok["mode"]
    ok["where"] = ok["scenario"] + "\n" + ok["offset"]
    written = []

    # 1. tokens after stop by offset, one line per framework x mode
    med = ok.groupby(["who", "where"])["tokens_after_stop"].median().unstack("where")
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * med.shape[1] + 4), 5))
    for who, row in med.iterrows():
        ax.plot(range(len(row)), row.values, marker="o", label=who)
    ax.set_xticks(range(med.shape[1]), med.columns, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("tokens generated after stop (median, log scale)")
    ax.set_yscale("symlog", linthresh=1)
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Tokens spent after the stop, by scenario and offset")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    written.append(_save(fig, to / "tokens_after_stop.png"))

    # 2. effects leaked heatmap: framework x mode against event anchors
    ev = ok[ok["offset_kind"] == "event"]
    if not ev.empty:
        heat = ev.groupby(["who", "where"])["effects_leaked"].median().unstack("where")
        fig, ax = plt.subplots(figsize=(max(8, 0.55 * heat.shape[1] + 4), max(3, 0.35 * heat.shape[0] + 2)))
        top = max(1.0, float(__import__("numpy").nanmax(heat.values)))
        im = ax.imshow(heat.values, aspect="auto", cmap="Reds", vmin=0, vmax=top)
        ax.set_xticks(range(heat.shape[1]), heat.columns, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(heat.shape[0]), heat.index, fontsize=8)
        for (i, j), v in __import__("numpy").ndenumerate(heat.values):
            if v == v:  # not NaN
                ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=7)
        fig.colorbar(im, ax=ax, label="effects leaked (median)")
        ax.set_title("Side effects that landed after the stop and were never undone (event anchors)")
        fig.tight_layout()
        written.append(_save(fig, to / "effects_leaked.png"))

    # 3. lie_ms distributions
    groups = [(who, g[g["trigger_precise"] != False]["lie_ms"].dropna().values)  # noqa: E712 (late stops: out)
              for who, g in ok.groupby("who")]
    groups = [(w, v) for w, v in groups if len(v)]
    if groups:
        fig, ax = plt.subplots(figsize=(8, max(3, 0.4 * len(groups) + 1.5)))
        ax.boxplot([v for _, v in groups], orientation="horizontal", tick_labels=[w for w, _ in groups])
        ax.set_xscale("symlog")
        ax.set_xlabel("lie_ms: from stop() returning to the run's last action (ms)")
        ax.set_title("How long the stop button lies")
        fig.tight_layout()
        written.append(_save(fig, to / "lie_ms.png"))
    return written


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
