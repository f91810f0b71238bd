"""The published report as a static site: a headline page that answers in 30 seconds, a page per framework,
a page per stop button listing every trial behind it, and a timeline for any trial from its evidence.

Plain files (jinja2 templates in harness/results/templates, one CSS and one JS file, no CDN): they work
opened from disk and on GitHub Pages. A trial's timeline is drawn in the browser from the evidence kept
with its row (harness/results/evidence.py), embedded in its button's page as the gzip the run wrote,
base64 (DecompressionStream unpacks it), so no page fetches anything.
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
from harness.results.evidence import read_evidence
from harness.results.markup import html_table, slug
from harness.results.plots import framework_colors
from harness.results.selection import CONDITION
from harness.vocabulary import Mark

TEMPLATES = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]
#: the columns of a button's trial table, in order (labels from the schema)
TRIAL_FIELDS = ("tokens_after_stop", "llm_requests_after_stop", "effects_after_stop", "effects_new",
                "effects_leaked", "lie_ms", "stop_return_ms", "threads_left", "orphans", "resume_ok",
                "resume_duplicate_effects")


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


@functools.lru_cache(maxsize=2)  # one adapter's button pages come one after the other: read its file once
def _views(path: Path) -> dict[str, str]:
    """trial_id -> that trial's timeline (`view` of its evidence) as one JSON line."""
    if not path.exists():
        return {}
    return {r["trial_id"]: json.dumps({**r, "events": view(r["events"])}, separators=(",", ":"))
            for r in read_evidence(path)}


def _evidence_blob(path: Path, trial_ids: set[str]) -> tuple[str, int]:
    """The timelines of these trials as base64 of one gzip of JSON lines, and how many were found. The page
    shows what the view keeps; the evidence file keeps every event."""
    lines = [line for tid, line in _views(path).items() if tid in trial_ids]
    if not lines:
        return "", 0
    packed = gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode(), len(lines)


def write_site(df, out: Path, claims: list[dict[str, Any]], cards: list[dict[str, Any]],
               tables: list[tuple[str, str, Any]], plots: list[Path], downloads: list[Path],
               notes: dict[str, str], history_dir: Path | None = None) -> list[Path]:
    """index.html, frameworks/<framework>.html, buttons/<adapter>--<mode>.html, history/ (when `history_dir`
    has runs: harness/results/history.py), assets/. Returns the pages."""
    import jinja2

    from harness.results.history import load_history, write_history

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["field"] = lambda v, name: schema.field(name).text(v)  # `{{ v|field("lie_ms") }}`
    env.filters["slug"] = lambda s: slug(s)
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ("site.css", "site.js"):
        shutil.copyfile(TEMPLATES / name, assets / name)
    for stale in ("frameworks", "buttons"):  # pages of buttons no longer measured must not linger
        shutil.rmtree(out / stale, ignore_errors=True)
    for page in (out / "history").glob("*.html") if (out / "history").is_dir() else []:
        page.unlink()
    env.globals["has_history"] = history_dir is not None and load_history(history_dir)[0] is not None
    folders = {f.name: f for f in discover(ROOT)}
    env.globals["colors"] = framework_colors(df["framework"])
    texts = mode_texts(ROOT)
    written = []
    common = {"n_trials": len(df), "notes": notes}

    index = out / "index.html"
    index.write_text(env.get_template("index.html.j2").render(
        **common, root="", cards=cards, claims=claims, tables=[(t, a, html_table(d)) for t, a, d in tables],
        plots=[p.name for p in plots], downloads=[d.name for d in downloads]))
    written.append(index)
    details = out / "details.html"
    details.write_text(env.get_template("details.html.j2").render(
        **common, root="", rules=notes.get("rules", ""), tables=[(t, a, html_table(d)) for t, a, d in tables]))
    written.append(details)

    (out / "frameworks").mkdir(exist_ok=True)
    (out / "buttons").mkdir(exist_ok=True)
    for card in cards:
        fw = card["framework"]
        folder = folders.get(fw)
        readme = _source_link(f"adapters/{folder.folder.name}/README.md", out / "frameworks") if folder else None
        page = out / "frameworks" / f"{slug(fw)}.html"
        page.write_text(env.get_template("framework.html.j2").render(
            **common, root="../", card=card, readme=readme, docs=folder.docs if folder else "",
            texts={f"{b['adapter']}|{b['mode']}": texts.get((b["adapter"], b["mode"]), "") for b in card["buttons"]},
            claims=[c for c in claims if c["framework"] == fw]))
        written.append(page)
        for b in card["buttons"]:
            written.append(_button_page(env, df, out, common, fw, b, texts.get((b["adapter"], b["mode"]), "")))
    if history_dir is not None:
        written += write_history(history_dir, out, env, common)
    return written


def _button_page(env, df, out: Path, common: dict, framework: str, b: dict[str, Any], text: str) -> Path:
    rows = df[(df["adapter"] == b["adapter"]) & (df["mode"] == b["mode"])].sort_values(
        ["mitigation", *CONDITION, "rep"])
    raw = out / "raw"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in b["adapter"])
    blob, found = _evidence_blob(out / "evidence" / f"{safe}.jsonl.gz", set(rows["trial_id"]))
    trials = []
    for _, r in rows.iterrows():
        trials.append({"trial_id": r["trial_id"], "run_id": r["run_id"], "scenario": r["scenario"],
                       "offset": r["offset"], "tool_style": r["tool_style"], "mitigation": r["mitigation"],
                       "rep": r["rep"], "status": r["status"],
                       "reason": r["reason"] if isinstance(r["reason"], str) else "",
                       "cells": [schema.field(f).text(r.get(f)) for f in TRIAL_FIELDS]})
    page = out / "buttons" / f"{slug(b['adapter'], b['mode'])}.html"
    page.write_text(env.get_template("button.html.j2").render(
        **common, root="../", framework=framework, b=b, text=text, trials=trials,
        labels=[schema.label(f) for f in TRIAL_FIELDS], evidence=blob, evidence_found=found,
        raw_file=f"../raw/{safe}.jsonl" if (raw / f"{safe}.jsonl").exists() else None))
    return page


def _source_link(path: str, page_dir: Path) -> str:
    """A link to a file of the repository: under STOPBENCH_SOURCE_URL (e.g. the repo's blob URL at the
    commit, for GitHub Pages) when set, else relative to the page (results/ inside the checkout)."""
    base = os.environ.get("STOPBENCH_SOURCE_URL", "").rstrip("/")
    if base:
        return f"{base}/{path}"
    return os.path.relpath(ROOT / path, page_dir.resolve())
