"""Result rows -> tables (Markdown, CSV, HTML). Every cell is computed from raw rows; nothing is typed in.

A corrupt line in a raw file is listed in the report (file:line) and skipped; it never stops it.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.clock import TRIGGER_TOLERANCE_MS
from harness.frameworks import is_reference
from harness.results import schema
from harness.results.capability import capability_rows, model_rule_text, rules_text, texts
from harness.results.cells import cells, frame, median, min_max, ratio_cell, values
from harness.results.claims import NOT_COUNTED
from harness.results.prices import cancel_tax
from harness.results.rows import CorruptLine, raw_files, read_rows
from harness.results.selection import (
    BUTTON,
    BUTTON_MITIGATION,
    CONDITION,
    MOMENT,
    STATUSES,
    in_main_matrix,
    is_anchored,
    is_late,
    is_measured,
    is_ok,
    tools_shown,
)
from harness.scenario import DEFAULT_OBSERVE_MS

# the measured columns of each table, in order; labels and cells come from the schema
SUMMARY = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "stop_return_ms", "lie_ms",
           "threads_left", "orphans", "resume_ok", "resume_duplicate_effects")
BY_OFFSET = ("tokens_after_stop", "llm_requests_after_stop", "effects_in_flight", "effects_new", "effects_leaked",
             "lie_ms", "threads_left", "orphans", "resume_ok", "resume_duplicate_effects")
CAPABILITY = ("tokens_after_stop", "effects_leaked", "lie_ms", "cancel_tax_usd")
TIME_SPREAD = ("tokens_after_stop", "effects_leaked")  # min..max over the time-anchored trials


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
- "After stop" = stamped by the world after the trial's stop and before `resume_started`: the `stop_called` mark
  (the press), or, for an adapter in another process that stamps it, `stop_handled` (the moment its process
  handled the stop; the way there is `stop_delivery_ms`).
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
    for (adapter, mode), g in df.groupby(list(BUTTON), sort=True):
        ok = g[is_ok(g)]
        statuses = g["status"].value_counts()
        out.append({
            "adapter": adapter, "mode": mode, "trials": len(g), "ok": len(ok),
            **{status: int(statuses.get(status, 0)) for status in STATUSES if status != "ok"},
            "late stop": int(is_late(g).sum()), **cells(ok, SUMMARY),
        })
    return pd.DataFrame(out)


def by_offset(df) -> Any:
    """Event-anchored trials: one line per adapter x mode x scenario x offset x tool style."""
    import pandas as pd

    ev = df[is_anchored(df, "event")]
    out = []
    keys = [*BUTTON, *CONDITION]
    for key, g in ev.groupby(keys, sort=True):
        ok = g[is_ok(g)]
        statuses = ", ".join(f"{s} {n}" for s, n in g["status"].value_counts().items())
        out.append({**dict(zip(keys, key, strict=True)), "trials": statuses, **cells(ok, BY_OFFSET)})
    return pd.DataFrame(out)


def time_spread(df) -> Any:
    """Time-anchored trials land at different points of the run: their spread is the point."""
    import pandas as pd

    tm = df[is_anchored(df, "time") & is_ok(df)]
    out = []
    keys = [*BUTTON, *MOMENT]  # every tool style of a moment together
    trigger = schema.field("trigger_delay_ms")
    for key, g in tm.groupby(keys, sort=True):
        out.append({**dict(zip(keys, key, strict=True)), "trials": len(g), "late stop": int(is_late(g).sum()),
                    **{f"{schema.label(n)} min..max": min_max(g, n) for n in TIME_SPREAD},
                    f"{trigger.short} p50": trigger.number(median(g[trigger.name]))})
    return pd.DataFrame(out)


def capability(df, caps: dict[tuple[str, str], dict[str, Any]]) -> Any:
    """The article's capability table, measured: one line per adapter x stop mode (mitigation none), with its
    capability row from `caps` (capability_rows)."""
    import pandas as pd

    base = df[df["mitigation"] == "none"]
    out = []
    for (adapter, mode), g in base.groupby(list(BUTTON), sort=True):
        ok = g[is_ok(g)]
        out.append({"adapter": adapter, "mode": mode, "N": len(g), **texts(caps[(adapter, mode)]),
                    **cells(ok.assign(cancel_tax_usd=cancel_tax(ok)), CAPABILITY)})
    return pd.DataFrame(out)


def mitigations(df) -> Any:
    """How much each mitigation recovers, on the cells measured with more than one mitigation."""
    import pandas as pd

    ok = df[is_ok(df)]
    keys = [*BUTTON, *CONDITION]
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
    ok = df[is_ok(df) & (df["mitigation"] == "saga+idempotent")]
    gaps = ok[(ok["effects_leaked"] > 0) | (ok["resume_duplicate_effects"].fillna(0) > 0)]
    cols = [*BUTTON, *CONDITION, "rep", "effects_after_stop", "effects_compensated", "effects_leaked",
            "resume_duplicate_effects", "trial_id"]
    return gaps[cols].sort_values(cols[:6]) if not gaps.empty else gaps


def problems(df) -> Any:
    bad = df[~is_ok(df)]
    if bad.empty:
        return bad
    cols = [*BUTTON, *CONDITION, "rep", "status", "reason"]
    return bad.assign(tool_style=tools_shown(bad))[cols].sort_values(cols[:6])  # the orphan matrix's too


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


def numeric_summary(df) -> Any:
    """summary.csv: one line per adapter x mode x mitigation, every value a number (median, min and max of
    the ok trials apart; counts of each status), for a spreadsheet or a script."""
    import pandas as pd

    out = []
    for (adapter, mode, mitigation), g in df.groupby(list(BUTTON_MITIGATION), sort=True):
        ok = g[is_ok(g)]
        line: dict[str, Any] = {"framework": g["framework"].iloc[0], "adapter": adapter, "mode": mode,
                                "mitigation": mitigation, "trials": len(g)}
        statuses = g["status"].value_counts()
        line.update({status: int(statuses.get(status, 0)) for status in STATUSES})
        line["late_stop"] = int(is_late(g).sum())
        for name in SUMMARY:
            nums = pd.to_numeric(values(ok, name), errors="coerce").dropna()
            for stat, v in (("median", median(nums)), ("min", nums.min()), ("max", nums.max())):
                line[f"{name}_{stat}"] = None if nums.empty else round(float(v), 3)
        out.append(line)
    return pd.DataFrame(out)


def _records(df) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records")) if df is not None and not df.empty else []


#: files and folders an older report wrote next to README.md, before the site moved into site/
OLD_LAYOUT = ("index.html", "details.html", "rows.csv", "tokens_after_stop.svg", "effects_leaked.svg", "lie_ms.svg",
              "tokens_after_stop.png", "effects_leaked.png", "lie_ms.png", "assets", "buttons", "frameworks")


def trial_counts(full, df) -> dict[str, int]:
    """The report's one count of trials, and its parts, computed once: every page says these numbers."""
    return {"rows": len(full), "main": len(df), "orphan_matrix": len(full) - len(df),
            "skipped": int((~is_measured(df)).sum()),
            "frameworks": sum(not is_reference(f) for f in df["framework"].unique()),
            "references": sum(is_reference(f) for f in df["framework"].unique())}


def model_rules(df) -> dict[str, int]:
    """How many of the judged rows each model rule measured (harness/model_rule.py): the resume verdicts read it."""
    if "model_rule" not in df.columns:
        return {}
    return {str(k): int(v) for k, v in df["model_rule"].value_counts().sort_index().items()}


def counts_text(c: dict[str, int]) -> str:
    ref = {0: "", 1: " and the reference agent"}.get(c["references"], f" and {c['references']} reference agents")
    frameworks = f"{c['frameworks']} agent framework" + ("" if c["frameworks"] == 1 else "s")
    return (f"{c['rows']:,} trials of {frameworks}{ref} ({c['main']:,} in the main matrix, "
            f"{c['skipped']:,} of them skipped; {c['orphan_matrix']:,} in the orphan matrix)")


def _clear_old_layout(to: Path) -> None:
    """Delete what an older report wrote next to README.md (it would be stale, and tracked by mistake): only
    files that say they are its output, and folders of nothing but pages."""
    import shutil

    def ours(path: Path) -> bool:
        if path.suffix == ".html":
            return "stopbench" in path.read_text(errors="replace")
        if path.name == "rows.csv":
            return path.read_text(errors="replace")[:40].startswith("schema_version")
        return path.suffix in (".svg", ".png")

    for name in OLD_LAYOUT:
        path = to / name
        if path.is_dir():
            if all(p.suffix in (".html", ".css", ".js") for p in path.rglob("*") if p.is_file()):
                shutil.rmtree(path)
        elif path.is_file() and ours(path):
            path.unlink()
    for page in [*(to / "history").glob("*.html"), *(to / "history").glob("*.svg")]:
        if ours(page):
            page.unlink()


#: writes each finding's reproducer into a folder: (results folder, findings, folder) -> file name -> "" when
#: written, else why not (stopbench.repro.write_reproducers: the CLI hands it in, the harness never imports it)
Reproduce = Callable[[Path, list, Path], dict[str, str]]
#: the site's folder of reproducers
REPRO = "repro"


def write_report(raw_dir: Path, to: Path, reproduce: Reproduce | None = None) -> list[Path]:
    """`to`: README.md, summary.csv, capability.csv, summary.json (small, for a reader of the repository) and
    the site in `to/site/` (index.html first, the plots, rows.csv, the findings with, when `reproduce` is given,
    a reproducer each in site/repro/). Every number from the rows of `raw_dir`."""
    import shutil

    from harness.results.counterparts import load_pairings, side_by_side
    from harness.results.orchestrators import orchestrator_table
    from harness.results.orphans import orphan_table
    from harness.results.settings import at_home_rows, scenario_billing
    from harness.scenario import load_scenarios

    pairings = load_pairings()  # a malformed data/counterparts.yaml stops the report before it deletes anything
    every, bad = load(raw_dir)
    scenarios = load_scenarios()
    billing = scenario_billing(scenarios)
    # the headline reads each framework at home (its home provider, its scenarios' billing); other settings
    # have their own tables
    full = at_home_rows(every)
    to.mkdir(parents=True, exist_ok=True)
    _clear_old_layout(to)
    df = full[in_main_matrix(full)] if not full.empty else full  # every table but the orphan matrix's
    if df.empty:
        text = "# stopbench results\n\nNo result rows yet: run `nox` (or `stopbench run`) first.\n"
        text += _corrupt_md(bad)
        (to / "README.md").write_text(text)
        return [to / "README.md"]
    from harness.results.agreement import agreement_frame
    from harness.results.claims import judged, load_claims
    from harness.results.findings import findings
    from harness.results.judgement_diff import SUMMARY_FORMAT
    from harness.results.plots import write_plots
    from harness.results.provider_tables import billing_costs, per_provider
    from harness.results.scorecard import best_rule, public, scorecard
    from harness.results.served_table import served_table
    from harness.results.site import SITE, claim_links, write_site
    from harness.results.variants import variant_table

    site = to / SITE
    if site.exists():
        shutil.rmtree(site)
    site.mkdir()
    counts = trial_counts(full, df)
    plots = write_plots(df, site)
    caps = capability_rows(df)  # read by the capability table and the scorecard
    cards = scorecard(df, caps)
    claims = []
    for claim in load_claims():
        c = {**claim, **judged(claim, full)}
        claims.append({**c, "links": claim_links(c)})
    found = findings(full, claims=claims, caps=caps)  # the claims and capability rows computed above
    reproducers = reproduce(raw_dir, found, site / REPRO) if reproduce else {}
    cap = capability(df, caps)
    pairs = side_by_side(df, caps, pairings)
    sections = [
        ("Capability table, measured", "capability", cap),
        ("Summary: each stop button", "summary", summary(df)),
        ("Mitigations: what the harness-side saga and idempotency keys recover", "mitigations", mitigations(df)),
        ("Where saga+idempotent does not reach 0 (leaked or repeated)", "gaps", mitigation_gaps(df)),
        ("The same job where the service honours a disconnect: an email in flight that landed (k/N trials), and "
         "the trials whose cancel reached the tool before the commit", "variants", variant_table(df, scenarios)),
        ("Event-anchored trials (the world freezes at the anchor: what varies is the framework's)", "event",
         by_offset(df)),
        ("Repetitions: trial cells whose event-anchored repetitions agree on the status and every count "
         "(`stopbench agree`; where they disagree, the framework raced its own stop)", "agreement",
         agreement_frame(df)),
        ("Time-anchored trials (spread)", "time", time_spread(df)),
        ("Orphans in the wild: each MCP launch variant, after close() and after a host crash (SIGKILL, no "
         "cleanup); processes, their memory (MB) and CPU seconds, medians over the trials that measured them (a "
         "hung stop's too: the harness reaped what it left)", "orphans",
         orphan_table(full)),
        ("Each button on each provider it was measured on (through the framework's own client for it, at its "
         "defaults): capability verdicts, medians, and the framework's best set on that provider", "providers",
         per_provider(every, billing)),
        ("What a stop costs under each billing profile: tokens billed after the stop by each headline best "
         "button, per provider, median [min..max] (ok trials) over the event-anchored conditions where the other "
         "profile was played", "billing", billing_costs(every, cards)),
        ("Orchestrators: what a coding agent's CLI left after each stop (trials with processes of the run alive 5 s "
         "and 30 s after it, k/n; medians of how many, their memory in MB, the model asked and effects landed after "
         "the stop, resume's repeats) and how the process the user started exited", "orchestrators",
         orchestrator_table(full)),
        ("The same button, served: each button's served trials (a server reacting to the client's stop presses it) "
         "beside its in-process trials of the same conditions: k/N of each judgement, medians over ok trials, whether "
         "the server's run ended, and what the path changes beyond the noise (a tie otherwise)", "served",
         served_table(full)),
        ("Trials that did not finish ok", "problems", problems(full)),
        ("Measured on", "environments", environments(df)),
    ]
    summary_csv = to / "summary.csv"
    numeric_summary(df).to_csv(summary_csv, index=False)
    capability_csv = to / "capability.csv"
    cap.to_csv(capability_csv, index=False)
    rows_csv = site / "rows.csv"  # every stored field, in the schema's order; objects (versions, by kind) left out
    flat = full[[c for c in full.columns if c not in schema.FIELDS or schema.FIELDS[c].type is not dict]]
    flat.to_csv(rows_csv, index=False)
    rule = best_rule()
    summary_json = to / "summary.json"
    summary_json.write_text(json.dumps({
        "format": SUMMARY_FORMAT, "trials": counts, "model_rules": model_rules(df), "best_rule": rule,
        "scorecard": public(cards),
        "capability_verdicts": {f"{a}/{m}": {col: v.as_dict() for col, v in verdicts.items()}
                                for (a, m), verdicts in caps.items()},
        "claims": [{**{k: c[k] for k in ("id", "framework", "claim", "rule", "rule_text", "verdict", "evidence",
                                         "k_counts")},
                    "judged_on": [{k: link[k] for k in (*BUTTON, "k", "n")} for link in c["links"]]}
                   for c in claims],
        "capability": _records(cap)}, indent=1, default=str) + "\n")
    readme = to / "README.md"
    rows_dir = Path(os.path.relpath(raw_dir.resolve(), to.resolve())).as_posix()  # as the report's folder sees it
    capability_rules = rules_text(model_rule=model_rule_text(df))
    readme.write_text(_markdown(df, rows_dir, counts, cards, claims, sections, bad, capability_rules, rule, found,
                                pairs))
    shas = ", ".join(sorted(df["git_sha"].astype(str).str[:7].unique()))
    notes = {
        "lede": (f"{counts_text(counts)}: the same scripted job, a stop pressed at controlled moments, and "
                 "everything counted from the outside by a world that plays the model provider and the services "
                 "(tokens after the stop, side effects that still landed, processes left, repeats on resume). "
                 "Every scorecard cell and every claim links to the trials behind it, and each trial to its "
                 "timeline."),
        "rules": RULES + "\n" + capability_rules,
        "unreadable": "; ".join(str(b) for b in bad),
        "footer": f"{counts_text(counts)}. Generated by `stopbench report` from {rows_dir}/raw/ (rows measured at "
                  f"{shas}).",
    }
    pages = write_site(df, raw_dir, site, claims, cards, sections, plots,
                       [summary_csv, capability_csv, rows_csv, summary_json], notes, found, reproducers,
                       history_dir=raw_dir / "history", pairs=pairs)
    written = sorted(site / REPRO / name for name, why in reproducers.items() if not why)
    return [readme, summary_csv, capability_csv, summary_json, rows_csv, *plots, *pages, *written]


#: a README table longer than this (in characters) is linked to its page on the site instead of printed
README_TABLE_CHARS = 60_000


def _markdown(df, rows_dir: str, counts, cards, claims, sections, bad, capability_rules: str, rule: str,
              found, pairs=()) -> str:
    import pandas as pd

    from harness.results.scorecard import SHARES
    from harness.results.site import SIDE_BY_SIDE

    score = pd.DataFrame([{
        "framework": c["framework"], "best button": best_text(c),
        **{s.label: share_text(c["best"]["shares"][s.key]) for s in SHARES}} for c in cards])
    site = os.environ.get("STOPBENCH_SITE_URL", "site/index.html")
    findings_page = site.rpartition("/")[0] + "/findings.html" if "/" in site else "findings.html"
    md = ["# stopbench results\n",
          f"{counts_text(counts)}, from `{rows_dir}/raw/`. Regenerate with `nox -s report`. The browsable report "
          f"is [the site]({site}) (`nox -s report` writes it to site/, which git does not keep; a page per "
          "framework, every trial behind every cell, a timeline per trial, a glossary).\n",
          "## The article's claims, checked\n",
          "The thesis and the article's table first, then each framework's claims. k/N: k of the N trials the rule "
          "read, k counting what the last column says; the buttons and the evidence are on the site's index page.\n",
          _md(pd.DataFrame([{"claim": c["claim"], "verdict": str(c["verdict"]), "rule": c["rule"],
                             "k/N": _claim_share(c), "k counts": c.get("k_counts") or "-"} for c in claims])),
          "## Scorecard: each framework's best stop button\n",
          "Each cell: k/N = k of the N trials where it applies (mitigation none), then the share's 95% interval "
          "(Wilson, over the conditions: each condition's repetitions weigh as one). Buttons within each other's "
          "interval are tied: the best set names them all.\n", _md(score), _wrapped(f"_{rule}._") + "\n",
          *_findings_md(found, findings_page),
          *_side_by_side_md(pairs, site.rpartition("/")[0] + f"/{SIDE_BY_SIDE}" if "/" in site else SIDE_BY_SIDE),
          "## How to read these tables\n", "```\n" + RULES + "```\n"]
    details = site.rpartition("/")[0] + "/details.html" if "/" in site else "details.html"
    for title, _, table in sections:
        text = _md(table)
        if len(text) > README_TABLE_CHARS:  # a long table is the site's: a README that GitHub still renders
            text = (f"{len(table)} rows: on [the site's details page]({details}) and every trial's "
                    "numbers in site/rows.csv.\n")
        md += [f"## {title}\n", text]
        if title.startswith("Capability"):
            md.append("```\n" + capability_rules + "```\n")
    md.append(_corrupt_md(bad))
    return "\n".join(md)


def _findings_md(found, page: str) -> list[str]:
    """The README's findings section: one line a framework (how many findings of each kind, the upstream issues
    they match, how many match none); the site's findings page lists each with its trials and a reproducer."""
    import pandas as pd

    from harness.results.findings import KINDS, NO_ISSUE

    lines = []
    for framework in sorted({f.framework for f in found}):
        mine = [f for f in found if f.framework == framework]
        issues = sorted({(f.issue, f.issue_url) for f in mine if f.issue != NO_ISSUE})
        lines.append({"framework": framework, "findings": len(mine),
                      "kinds": ", ".join(f"{kind} {n}" for kind in KINDS if (n := sum(f.kind == kind for f in mine))),
                      "upstream issues they match": ", ".join(f"[{i}]({url})" for i, url in issues) or "-",
                      NO_ISSUE: sum(f.issue == NO_ISSUE for f in mine)})
    matched = sum(f.issue != NO_ISSUE for f in found)
    return ["## Findings: stop buttons that leak, hang, fail, repeat on resume or leave processes\n",
            f"{len(found)} findings, {matched} of them matching an upstream issue (data/upstream_issues.yaml). "
            f"[The findings page]({page}) lists each: its button, the trials behind it, a representative trial's "
            "timeline, the upstream issue and a reproducer to download (one Python file that runs the trial "
            "again: `stopbench repro`).\n", _md(pd.DataFrame(lines))]


def _side_by_side_md(pairs, page: str) -> list[str]:
    """The README's side-by-side section: per pair (harness/results/counterparts.py side_by_side) what differs,
    and at each moment every button's cells, the counterpart's line above the adapter's."""
    import pandas as pd

    from harness.results.counterparts import COLUMNS

    if not pairs:
        return []
    md = ["## Side by side: the same framework in two languages\n",
          f"Each pair button by button ([the side-by-side page]({page}) has what each button presses): medians over "
          "the ok trials, resume ok k/N of the trials that resumed; mitigation none, the tool styles both ran.\n"]
    for p in pairs:
        md.append(f"### {p['counterpart']} and {p['adapter']}\n")
        md.append(f"What differs (capability verdicts, {p['counterpart']} vs {p['adapter']}): {p['differs_line']}\n")
        for m in p["moments"]:
            md.append(f"{m['name']} ({m['scenario']} `{m['offset']}`; tool styles {', '.join(p['tool_styles'])}):\n")
            md.append(_md(pd.DataFrame([{"adapter": line["adapter"], "mode": line["mode"],
                                          **{header: line["cells"][key] for key, header in COLUMNS}}
                                         for line in m["lines"]])))
    return md


def share_text(v: dict[str, Any]) -> str:
    """A scorecard share as a table writes it: `k/N (lo%-hi%)`, `n/a` when it does not apply (N = 0)."""
    if not v["n"]:
        return "n/a"
    return f"{schema.ratio_text(v['k'], v['n'])} ({v['lo']:.0%}-{v['hi']:.0%})"


def _wrapped(paragraph: str, width: int = 110) -> str:
    """A paragraph as lines of at most `width` characters (Markdown joins them): README.md reads on GitHub."""
    return "\n".join(textwrap.wrap(paragraph, width, break_long_words=False, break_on_hyphens=False))


def best_text(card: dict[str, Any]) -> str:
    """The best button, or the buttons tied for best, each named by its mode (and adapter when a variant's)."""
    names = [m if a == card["framework"] else f"{m} ({a})" for a, m in card["best_set"]]
    return names[0] if len(names) == 1 else " = ".join(names) + " (tied)"


def _claim_share(c: dict[str, Any]) -> str:
    if c.get("k_counts") == NOT_COUNTED:
        return "-"
    k = sum(link["k"] for link in c["links"])
    n = sum(link["n"] for link in c["links"])
    return f"{k}/{n}" if n else "-"


def _corrupt_md(bad: list[CorruptLine]) -> str:
    if not bad:
        return ""
    lines = "\n".join(f"- `{b}`" for b in bad)
    return f"## Unreadable result lines (skipped)\n\n{lines}\n"
