"""The published report as a static site under `<report>/site/` (never committed: `nox -s report` makes it): a
headline page that answers in 30 seconds, a page per framework, a page per stop button listing every trial
behind it (filterable; each scorecard cell links to exactly its trials), a glossary, and a timeline for any
trial from its evidence.

Plain files (jinja2 templates in harness/results/templates, one CSS and one JS file, no CDN): they work
opened from disk and on GitHub Pages. A trial's timeline is drawn in the browser from the evidence kept
with its row (harness/results/evidence.py), embedded in its button's page as one gzip, base64
(DecompressionStream unpacks it), so no page fetches anything. The same rows give the same bytes.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

from harness.frameworks import discover
from harness.results import schema
from harness.results.counterparts import COLUMNS
from harness.results.dataset import as_published
from harness.results.evidence import adapter_evidence, read_evidence
from harness.results.findings import NO_ISSUE, Finding
from harness.results.glossary import NOTATION, glossary_terms, header_links
from harness.results.markup import html_table, slug
from harness.results.plots import framework_colors
from harness.results.rows import adapter_raw_files
from harness.results.rows import raw_file as rows_file
from harness.results.scorecard import SHARES, base_rows, best_rule, legend, trial_flags
from harness.results.selection import BUTTON, CONDITION
from harness.vocabulary import Mark

TEMPLATES = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]
#: the site's folder inside a report's folder
SITE = "site"
#: the page of each framework beside its counterpart in another language
SIDE_BY_SIDE = "side-by-side.html"
#: the columns of a button's trial table, in order (labels from the schema)
TRIAL_FIELDS = ("tokens_after_stop", "llm_requests_after_stop", "effects_after_stop", "effects_in_flight",
                "effects_new", "effects_leaked", "lie_ms", "stop_return_ms", "threads_left", "orphans", "resume_ok",
                "resume_duplicate_effects")
#: a details table whose page would be larger than this gets a page of its own
OWN_PAGE_BYTES = 200_000
#: no page may be larger than this: a table larger still gets a page per adapter
MAX_PAGE_BYTES = 900_000


def mode_texts(root: Path = ROOT) -> dict[tuple[str, str], str]:
    """(adapter name, mode) -> what the button presses, as the framework folders declare it (framework.toml, read
    without importing any framework: the report runs where no framework is installed)."""
    return {(d.name, mode): text for f in discover(root) for d in f.declarations for mode, text in d.stop_modes.items()}


def view(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a timeline shows of a ledger: every event, but each run of tokens as one `tokens` entry (how many,
    first and last time), split where stop was pressed so the tokens after the stop stand apart."""
    stop = next((e["t"] for e in events if e["event"] == "mark" and e.get("name") == Mark.STOP_CALLED), None)
    out: list[dict[str, Any]] = []
    for e in sorted(events, key=lambda e: e["t"]):
        if e["event"] != "token":
            out.append(e)
            continue
        last = out[-1] if out else None
        after = stop is not None and e["t"] > stop
        if last is not None and last["event"] == "tokens" and last["req"] == e.get("req") and last["after"] == after:
            last["n"] += 1
            last["t_last"] = e["t"]
        else:
            out.append({"event": "tokens", "req": e.get("req"), "n": 1, "t": e["t"], "t_last": e["t"], "after": after})
    return out


@functools.lru_cache(maxsize=2)  # one adapter's button pages come one after the other: read its files once
def _views(paths: tuple[Path, ...]) -> dict[str, str]:
    """trial_id -> that trial's timeline (`view` of its evidence, its token times as published: the page is the same
    from a run's lines and from the dataset) as one JSON line; a later file's record wins."""
    return {r["trial_id"]: json.dumps({**r, "events": view(as_published(r["events"]))}, separators=(",", ":"),
                                      sort_keys=True)
            for path in paths for r in read_evidence(path)}


def _evidence_blob(paths: list[Path], trial_ids: list[str]) -> tuple[str, int]:
    """The timelines of these trials (in this order) as base64 of one gzip of JSON lines, and how many were
    found. The page shows what the view keeps; the evidence file keeps every event."""
    views = _views(tuple(paths))
    lines = [views[tid] for tid in trial_ids if tid in views]
    if not lines:
        return "", 0
    packed = gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode(), len(lines)


def _env():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["field"] = lambda v, name: schema.field(name).text(v)  # `{{ v|field("lie_ms") }}`
    env.filters["slug"] = lambda s: slug(s)
    env.filters["ms"] = lambda v: "-" if v is None else f"{v:g}"
    return env


def write_site(df, raw_dir: Path, out: Path, claims: list[dict[str, Any]], cards: list[dict[str, Any]],
               tables: list[tuple[str, str, Any]], plots: list[Path], downloads: list[Path],
               notes: dict[str, Any], found: list[Finding], reproducers: dict[str, str],
               history_dir: Path | None = None, pairs: list[dict[str, Any]] | None = None) -> list[Path]:
    """The site into `out` (a fresh folder: the report empties it, so nothing of an older report lingers; the
    plots are drawn there first): index.html, glossary.html, details.html, findings.html,
    frameworks/<framework>.html, buttons/<adapter>--<mode>.html, side-by-side.html (`pairs`:
    harness/results/counterparts.py side_by_side), history/ (when `history_dir` has runs:
    harness/results/history.py), assets/, the plots and the downloads. `raw_dir`: the folder the rows and
    evidence were read from; `found`: the findings (harness/results/findings.py), `reproducers`: file name -> ""
    for each reproducer written in out/repro/, else why none was. Returns the pages."""
    from harness.results.history import load_history, write_history

    env = _env()
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ("site.css", "site.js"):
        shutil.copyfile(TEMPLATES / name, assets / name)
    for f in [*plots, *downloads]:
        if f.parent != out:
            shutil.copyfile(f, out / f.name)
    env.globals["has_history"] = history_dir is not None and load_history(history_dir)[0] is not None
    folders = {f.name: f for f in discover(ROOT)}
    env.globals["colors"] = framework_colors(df["framework"])
    env.globals["shares"] = SHARES
    env.globals["side_by_side"] = SIDE_BY_SIDE  # the nav and the index link it
    texts = mode_texts(ROOT)
    written = []
    common = {"notes": notes}

    def table(d, root: str) -> str:
        return header_links(html_table(d, root), root)

    listed = finding_rows(df, found, reproducers)
    env.globals["findings_count"] = (len(listed), sum(f["issue_url"] != "" for f in listed))
    env.globals["no_issue"] = NO_ISSUE

    index = out / "index.html"
    index.write_text(env.get_template("index.html.j2").render(
        **common, root="", cards=cards, claims=claims, best_rule=best_rule(), legend=legend(),
        tables=[(t, a, table(d, "")) for t, a, d in tables[:1]],
        plots=[p.name for p in plots[:1]], more_plots=len(plots) > 1, downloads=[d.name for d in downloads],
        pairs=pairs or []))
    written.append(index)
    side = out / SIDE_BY_SIDE  # each framework beside its counterpart in another language
    side.write_text(env.get_template("side_by_side.html.j2").render(**common, root="", pairs=pairs or [],
                                                                      columns=COLUMNS))
    written.append(side)
    plots_page = out / "plots.html"  # every plot; the index shows the first (the leaks) alone, to stay light
    plots_page.write_text(env.get_template("plots.html.j2").render(**common, root="", plots=[p.name for p in plots]))
    written.append(plots_page)
    written += _details(env, out, common, tables, table)
    own = out / "details-orphans.html"  # the orphan matrix's table: where a finding's trials off its button page are
    env.globals["orphans_href"] = own.name if own.exists() else "details.html#orphans"
    glossary = out / "glossary.html"
    glossary.write_text(env.get_template("glossary.html.j2").render(
        **common, root="", terms=glossary_terms(), notation=NOTATION, rules=notes.get("rules", "")))
    written.append(glossary)

    (out / "frameworks").mkdir()
    (out / "buttons").mkdir()
    base = base_rows(df)
    claim_flags = _claim_flags(claims)
    found_flags = finding_flags(found)
    for card in cards:
        fw = card["framework"]
        folder = folders.get(fw)
        readme_path = f"adapters/{folder.folder.name}/README.md" if folder else ""
        readme = _source_link(readme_path, out / "frameworks") if folder else None
        page = out / "frameworks" / f"{slug(fw)}.html"
        page.write_text(env.get_template("framework.html.j2").render(
            **common, root="../", card=card, readme=readme, readme_path=readme_path,
            docs=folder.docs if folder else "",
            texts={f"{b['adapter']}|{b['mode']}": texts.get((b["adapter"], b["mode"]), "") for b in card["buttons"]},
            claims=[c for c in claims if c["framework"] == fw], findings=[f for f in listed if f["framework"] == fw]))
        written.append(page)
        for b in card["buttons"]:
            written.append(_button_page(env, df, base, raw_dir, out, common, fw, b,
                                        texts.get((b["adapter"], b["mode"]), ""), claim_flags, found_flags))
    findings_page = out / "findings.html"
    findings_page.write_text(env.get_template("findings.html.j2").render(**common, root="", findings=listed))
    written.append(findings_page)
    if history_dir is not None:
        written += write_history(history_dir, out, env, common)
    return written


def _details(env, out: Path, common: dict, tables, table) -> list[Path]:
    """details.html with every table, but one that is large on a page of its own (details-<anchor>.html)."""
    shown, own, written = [], [], []

    def own_page(name: str, title: str, anchor: str, html: str, n: int) -> None:
        page = out / f"details-{name}.html"
        page.write_text(env.get_template("details.html.j2").render(
            **common, root="", rules="", tables=[(title, anchor, html)], own=[]))
        written.append(page)
        own.append((title, page.name, n))

    for title, anchor, d in tables:
        html = table(d, "")
        if len(html) > MAX_PAGE_BYTES and "adapter" in d.columns:  # a page per adapter, each well under the cap
            for adapter, part in d.groupby("adapter", sort=True):
                own_page(f"{anchor}-{slug(str(adapter))}", f"{title}: {adapter}", anchor, table(part, ""), len(part))
        elif len(html) > OWN_PAGE_BYTES:
            own_page(anchor, title, anchor, html, len(d))
        else:
            shown.append((title, anchor, html))
    details = out / "details.html"
    details.write_text(env.get_template("details.html.j2").render(
        **common, root="", rules=common["notes"].get("rules", ""), tables=shown, own=own))
    return [details, *written]


def _claim_flags(claims: list[dict[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    """trial_id -> (claims it was judged in, claims it decided): the button pages mark trials with them."""
    flags: dict[str, tuple[list[str], list[str]]] = {}
    for c in claims:
        for which, rows in enumerate((c["over"], c["counted"])):
            for tid in rows["trial_id"] if len(rows) else []:
                flags.setdefault(tid, ([], []))[which].append(f"claim-{c['id']}")
    return flags


def claim_links(claim: dict[str, Any]) -> list[dict[str, Any]]:
    """Per button a claim was judged on: the link to its page filtered to the trials that decided it (k of N),
    or to all N when none did."""
    over, counted = claim["over"], claim["counted"]
    out = []
    if not len(over):
        return out
    for (adapter, mode), g in over.groupby(list(BUTTON), sort=True):
        k = int(counted[(counted["adapter"] == adapter) & (counted["mode"] == mode)]["trial_id"].nunique()) \
            if len(counted) else 0
        n = int(g["trial_id"].nunique())
        which = "cell" if k else "over"
        out.append({"adapter": adapter, "mode": mode, "k": k, "n": n,
                    "href": f"buttons/{slug(adapter, mode)}.html#{which}=claim-{claim['id']}"})
    return out


def finding_key(kind: str) -> str:
    """The key a button page's filter lists a finding's trials by (`#cell=finding-leak`)."""
    return f"finding-{slug(kind)}"


def finding_flags(found: list[Finding]) -> dict[str, list[str]]:
    """trial_id -> the keys of the findings it shows (a button page's filter lists them)."""
    flags: dict[str, list[str]] = {}
    for f in found:
        for tid in f.trial_ids:
            flags.setdefault(tid, []).append(finding_key(f.kind))
    return flags


def finding_rows(df, found: list[Finding], reproducers: dict[str, str]) -> list[dict[str, Any]]:
    """What the findings page and the framework pages show of each finding, links relative to the site's root:
    its button page filtered to its trials (those of the main matrix: its page lists no others), its
    representative trial's timeline there, its upstream issue and its reproducer."""
    out = []
    places: dict[tuple[str, str], dict[str, int]] = {}
    for f in found:
        if (f.adapter, f.mode) not in places:
            order = _button_rows(df, f.adapter, f.mode)["trial_id"]
            places[(f.adapter, f.mode)] = {tid: i for i, tid in enumerate(order, 1)}
        place = places[(f.adapter, f.mode)]
        page = f"buttons/{slug(f.adapter, f.mode)}.html"
        why = reproducers.get(f.reproducer_file, "no reproducer written: `stopbench report` writes them")
        on_page = sum(tid in place for tid in f.trial_ids)
        out.append({"framework": f.framework, "adapter": f.adapter, "mode": f.mode, "kind": f.kind,
                    "trials": f.trials, "of": f.of, "on_page": on_page, "cell": f.cell, "claims": f.claims,
                    "href": f"{page}#cell={finding_key(f.kind)}" if on_page else page, "trial_id": f.trial_id,
                    "timeline": f"{page}#trial={place[f.trial_id]}" if f.trial_id in place else "",
                    "issue": f.issue, "issue_url": f.issue_url, "issue_title": f.issue_title,
                    "issue_state": f.issue_state, "reproducer": "" if why else f"repro/{f.reproducer_file}",
                    "no_reproducer": why})
    return out


def _button_rows(df, adapter: str, mode: str):
    """A button's trials in its page's order (a trial's number there: its place in this order, from 1)."""
    return df[(df["adapter"] == adapter) & (df["mode"] == mode)].sort_values(
        ["mitigation", *CONDITION, "rep", "trial_id"])


def _button_page(env, df, base, raw_dir: Path, out: Path, common: dict, framework: str, b: dict[str, Any],
                 text: str, claim_flags: dict[str, tuple[list[str], list[str]]],
                 found_flags: dict[str, list[str]]) -> Path:
    rows = _button_rows(df, b["adapter"], b["mode"])
    mine = base[(base["adapter"] == b["adapter"]) & (base["mode"] == b["mode"])]
    flags = trial_flags(mine)
    over = {tid: [k for k, (o, _) in flags.items() if o[i]] for i, tid in zip(mine.index, mine["trial_id"],
                                                                              strict=True)}
    counted = {tid: [k for k, (_, c) in flags.items() if c[i]] for i, tid in zip(mine.index, mine["trial_id"],
                                                                                 strict=True)}
    blob, found = _evidence_blob(adapter_evidence(raw_dir, b["adapter"]), list(rows["trial_id"]))
    trials = []
    for _, r in rows.iterrows():
        tid = r["trial_id"]
        claimed = claim_flags.get(tid, ([], []))
        trials.append({"trial_id": tid, "run_id": r["run_id"], "scenario": r["scenario"],
                       "offset": r["offset"], "tool_style": r["tool_style"], "mitigation": r["mitigation"],
                       "rep": r["rep"], "status": r["status"],
                       "reason": r["reason"] if isinstance(r["reason"], str) else "",
                       "n": " ".join([*over.get(tid, []), *claimed[0]]),
                       "k": " ".join([*counted.get(tid, []), *claimed[1], *found_flags.get(tid, [])]),
                       "cells": [schema.field(f).text(r.get(f)) for f in TRIAL_FIELDS]})
    page = out / "buttons" / f"{slug(b['adapter'], b['mode'])}.html"
    # the rows' folder, whichever kind holds them (JSON Lines or the published dataset: the page is the same)
    rows_at = raw_dir / "raw" if adapter_raw_files(raw_dir, b["adapter"]) else None
    filters = {name: sorted({t[name] for t in trials}, key=str)
               for name in (*CONDITION, "mitigation", "status")}
    page.write_text(env.get_template("button.html.j2").render(
        **common, root="../", framework=framework, b=b, text=text, trials=trials, filters=filters,
        fields=TRIAL_FIELDS, labels=[schema.label(f) for f in TRIAL_FIELDS], evidence=blob, evidence_found=found,
        raw_file=_relative(rows_at, page.parent) + "/" if rows_at else None,
        raw_name=f"raw/{rows_file(raw_dir, b['adapter']).stem}"))
    return page


def _relative(path: Path, page_dir: Path) -> str:
    return Path(os.path.relpath(path.resolve(), page_dir.resolve())).as_posix()


def _source_link(path: str, page_dir: Path) -> str | None:
    """A link to a file of the repository: under STOPBENCH_SOURCE_URL (e.g. the repo's blob URL at the
    commit, for GitHub Pages) when set, else relative to the page when the site is inside the checkout. A site
    elsewhere gets none (the page names the file): a path from it to this checkout would make the page depend on
    where it was written, and break when it moves."""
    base = os.environ.get("STOPBENCH_SOURCE_URL", "").rstrip("/")
    if base:
        return f"{base}/{path}"
    if not page_dir.resolve().is_relative_to(ROOT.resolve()):
        return None
    return _relative(ROOT / path, page_dir)
