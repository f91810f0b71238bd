"""Findings: each stop button (adapter x mode) whose capability cell or claim says it leaks, hangs, fails, repeats a
side effect on resume or leaves processes, with the trials behind it, one representative trial (the one a
reproducer runs: `stopbench repro`), the claims that say so, and the upstream issue it matches
(data/upstream_issues.yaml), or "no upstream issue found".

A finding is read off the rows the capability table reads (mitigation none, the main matrix, every status but
skipped, no trial with nothing left to stop; harness/results/capability.py), with its predicates:
- leak: the run went on after a stop at an event anchor (asked the model or sent a new effect: `went_on`, as "can
  abort" reads it), ran away, or an effect landed after the button said stopped and stayed (effects_leaked > 0 with
  lie_ms > 0, any offset: "compensated");
- hang: a trial hung (status `hung`): "can abort ... hangs (h/n)";
- fail: a trial failed (status `failed`, any step);
- repeats on resume: the resume committed again an effect of before it (resume_duplicate_effects > 0): "repeats
  effect";
- leaves processes: processes of the run alive after close (orphans > 0), in the main matrix and in the orphan
  matrix's launch variants with a host that closes: "orphans clean" and the claim orphans_seen.
The site calls `findings(df)` (each Finding names its reproducer's file: `reproducer_file`) and may show
`findings_text`; `stopbench findings DIR [--reproducers FOLDER]` prints them and writes the reproducers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.frameworks import ROOT
from harness.results.capability import capability_verdicts
from harness.results.cells import numbers
from harness.results.claims import judge, load_claims
from harness.results.judgement import Word, nothing_to_stop, went_on
from harness.results.selection import BUTTON, CONDITION, in_main_matrix, is_anchored, is_measured

KINDS = ("leak", "hang", "fail", "repeats on resume", "leaves processes")
UPSTREAM = ROOT / "data" / "upstream_issues.yaml"
NO_ISSUE = "no upstream issue found"
#: the claims' rules, and the kinds of finding a verdict of theirs that confirms the bad behaviour bears on
RULE_KINDS = {"keeps_running": ("leak", "hang", "fail"), "keeps_working": ("leak",),
              "stops_cleanly": ("leak", "hang", "fail"), "no_abort_and_no_resume": ("leak", "hang", "fail"),
              "resumes_cleanly": ("repeats on resume", "fail"), "orphans_seen": ("leaves processes",),
              "orphans_after_close": ("leaves processes",), "stops_effects_in_flight": ("leak",)}
#: a claim's verdict that says the bad thing happened: keeps_running confirmed, stops_cleanly refuted, ...
BAD_VERDICTS = {"keeps_running": (Word.CONFIRMED, Word.PARTLY), "keeps_working": (Word.CONFIRMED, Word.PARTLY),
                "stops_cleanly": (Word.REFUTED, Word.PARTLY), "no_abort_and_no_resume": (Word.CONFIRMED, Word.PARTLY),
                "resumes_cleanly": (Word.REFUTED, Word.PARTLY), "orphans_seen": (Word.CONFIRMED,),
                "orphans_after_close": (Word.CONFIRMED,), "stops_effects_in_flight": (Word.REFUTED, Word.PARTLY)}
#: which capability cell states each kind
CELLS = {"leak": ("can abort", "compensated"), "hang": ("can abort",), "fail": ("can abort", "can resume"),
         "repeats on resume": ("repeats effect",), "leaves processes": ("orphans clean",)}
TOOL_ORDER = {"async": 0, "sync": 1, "mcp": 2}


class UpstreamError(ValueError):
    """data/upstream_issues.yaml is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Finding:
    framework: str
    adapter: str
    mode: str
    kind: str
    trials: int  # the trials that show it
    of: int  # the trials read
    cell: str  # what the capability cells that state it say
    trial_id: str  # the representative trial (a reproducer runs it)
    trial_ids: tuple[str, ...] = ()  # every trial that shows it
    claims: tuple[str, ...] = ()  # `claim id: verdict` of the claims that say so
    issue: str = NO_ISSUE  # owner/repo#number, or NO_ISSUE
    issue_title: str = ""
    issue_state: str = ""

    @property
    def reproducer_file(self) -> str:
        """The file name of its reproducer (`stopbench findings DIR --reproducers FOLDER` writes it there)."""
        return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{self.adapter}--{self.mode}--{self.kind.replace(' ', '-')}") + ".py"

    @property
    def issue_url(self) -> str:
        """The issue's address on GitHub (its pull request's, if it is one: GitHub redirects), "" when none."""
        if self.issue == NO_ISSUE:
            return ""
        repo, _, number = self.issue.partition("#")
        return f"https://github.com/{repo}/issues/{number}"


def load_upstream(path: Path = UPSTREAM) -> list[dict[str, str]]:
    """The upstream issues, in file order (the first that matches a finding is its issue)."""
    data = yaml.safe_load(path.read_text()) if path.exists() else []
    if not isinstance(data, list):
        raise UpstreamError(f"{path}: expected a list of entries (framework, mode, kind, issue, title, state)")
    for i, entry in enumerate(data):
        where = f"{path}: entry {i + 1}"
        if not isinstance(entry, dict):
            raise UpstreamError(f"{where}: expected a mapping")
        unknown = set(entry) - {"framework", "mode", "kind", "issue", "title", "state"}
        if unknown:
            raise UpstreamError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("framework", "issue", "title"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise UpstreamError(f"{where}: {key}: expected text, got {entry.get(key)!r}")
        if "#" not in entry["issue"] or "/" not in entry["issue"].partition("#")[0]:
            raise UpstreamError(f"{where}: issue: expected owner/repo#number, got {entry['issue']!r}")
        if entry.get("kind") is not None and entry["kind"] not in KINDS:
            raise UpstreamError(f"{where}: kind: {entry['kind']!r} is none of {', '.join(KINDS)}")
    return data


def match(upstream: list[dict[str, str]], framework: str, mode: str, kind: str) -> dict[str, str] | None:
    return next((e for e in upstream if e["framework"] == framework and e.get("mode", mode) == mode
                 and e.get("kind", kind) == kind), None)


def _shows(g, kind: str):
    """Boolean Series over the cell's rows: the trials that show `kind`."""
    status = g["status"]
    if kind == "leak":  # went on at an event anchor (as "can abort" reads it), or landed after stop returned
        landed = (numbers(g, "effects_leaked") > 0) & (numbers(g, "lie_ms") > 0)
        return ((status == "ok") & ((is_anchored(g, "event") & went_on(g)) | landed)) | (status == "runaway")
    if kind == "hang":
        return status == "hung"
    if kind == "fail":
        return status == "failed"
    if kind == "repeats on resume":
        return numbers(g, "resume_duplicate_effects") > 0
    return (numbers(g, "orphans") > 0) & (g["host"] != "crash")


def _representative(shown, rows) -> str:
    """The trial a reproducer runs: one of a trial cell whose every repetition shows the finding first (not a
    race), event-anchored (the world freezes at its anchor), then async, sync, MCP tools, the MCP server launched
    as the docs show, the first repetition."""
    cell = [*CONDITION, "mcp_launch", "host"]
    share = (shown.groupby(cell).size() / rows.groupby(cell).size()).to_dict()
    event = is_anchored(shown, "event")

    def key(i: Any) -> tuple:
        r = shown.loc[i]
        return (-share.get(tuple(r[c] for c in cell), 0.0), not bool(event.loc[i]), TOOL_ORDER.get(r["tool_style"], 9),
                r["mcp_launch"] != "direct", str(r["offset"]), int(r["rep"] or 0), str(r["trial_id"]))
    return str(shown.loc[min(shown.index, key=key), "trial_id"])


def _claims(df, claims: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[tuple[str, str, str]]]:
    """(framework, mode or None) -> (claim id, rule, verdict) of the claims whose verdict says the bad thing; a
    claim that carries its verdict (claims.judged: the report's) is not judged again."""
    out: dict[tuple[str, str | None], list[tuple[str, str, str]]] = {}
    for claim in claims:
        rule = claim["rule"]
        if rule not in RULE_KINDS:
            continue
        verdict = claim["verdict"] if "verdict" in claim else judge(claim, df)[0]
        if verdict in BAD_VERDICTS[rule]:
            out.setdefault((claim["framework"], claim.get("mode")), []).append((claim["id"], rule, verdict))
    return out


def findings(df, upstream: list[dict[str, str]] | None = None, claims: list[dict[str, Any]] | None = None,
             caps: dict[tuple[str, str], dict[str, Any]] | None = None) -> list[Finding]:
    """Every finding over the rows `df` (a report frame: harness.results.report.load), by framework, adapter, mode
    and kind (KINDS order). `caps`: the capability rows already computed over the main matrix
    (capability_rows: the report's), else computed here."""
    upstream = load_upstream() if upstream is None else upstream
    claims = load_claims() if claims is None else claims
    judged = _claims(df, claims)
    measured = df[is_measured(df) & ~nothing_to_stop(df) & (df["mitigation"] == "none")]  # as every verdict reads
    out: list[Finding] = []
    for (adapter, mode), g in measured.groupby(list(BUTTON), sort=True):
        cell_rows = g[in_main_matrix(g)]
        if cell_rows.empty:
            cap = {}
        else:
            cap = caps[(adapter, mode)] if caps and (adapter, mode) in caps else capability_verdicts(cell_rows)
        framework = str(g["framework"].iloc[0])
        for kind in KINDS:
            rows = g if kind == "leaves processes" else cell_rows  # the orphan matrix too (orphans_seen)
            shown = rows[_shows(rows, kind)] if not rows.empty else rows
            if shown.empty:
                continue
            said = [f"{cid}: {verdict}" for (fw, m), items in judged.items() if fw in (framework, "*")
                    and m in (None, mode) for cid, rule, verdict in items if kind in RULE_KINDS[rule]]
            issue = match(upstream, framework, str(mode), kind)
            out.append(Finding(
                framework, str(adapter), str(mode), kind, len(shown), len(rows),
                "; ".join(f"{c}: {cap.get(c, '-')}" for c in CELLS[kind]),
                _representative(shown, rows), tuple(sorted(map(str, shown["trial_id"]))), tuple(said),
                *((issue["issue"], issue["title"], issue.get("state", "")) if issue else (NO_ISSUE, "", ""))))
    return sorted(out, key=lambda f: (f.framework, f.adapter, f.mode, KINDS.index(f.kind)))


def findings_text(found: list[Finding], reproducers: dict[tuple[str, str, str], str] | None = None) -> str:
    """The findings as Markdown: one line each, with the representative trial, the claims, the upstream issue and,
    when written, its reproducer."""
    reproducers = reproducers or {}
    lines = [f"# stopbench findings ({len(found)})", "",
             "| framework | adapter | mode | kind | trials | capability cell | representative trial | claims | "
             "upstream | reproducer |", "|" + "---|" * 10]
    for f in found:
        upstream = NO_ISSUE if f.issue == NO_ISSUE else f"[{f.issue}]({f.issue_url}): {f.issue_title}" + (
            f" ({f.issue_state})" if f.issue_state else "")
        repro = reproducers.get((f.adapter, f.mode, f.kind), "")
        lines.append("| " + " | ".join([f.framework, f.adapter, f.mode, f.kind, f"{f.trials}/{f.of}",
                                        f.cell.replace("|", "/"), f"`{f.trial_id}`", "; ".join(f.claims) or "-",
                                        upstream.replace("|", "/"), repro]) + " |")
    matched = sum(f.issue != NO_ISSUE for f in found)
    lines += ["", f"{matched} of {len(found)} findings match an upstream issue (data/upstream_issues.yaml); the "
              f"others: {NO_ISSUE}.", ""]
    return "\n".join(lines)
