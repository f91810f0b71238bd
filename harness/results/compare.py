"""`stopbench compare OLD NEW`: the capability table of two result folders side by side.

The typical use is two versions of one framework ("did 1.2 fix the stop button?"). Rows are only
comparable when they were measured the same way, so the comparison refuses rows of another result
schema, and a scenario whose definition (its hash) differs between the folders. Both sides are cut
down to the trial cells (scenario x offset x tool style) they have in common, so N counts the same
conditions on both sides.

Two runs of the same code differ where the framework races the stop (harness/results/spread.py): a count
or a verdict is a change only when its difference is beyond that run-to-run spread (a stratified
permutation test over the trial cells, p < ALPHA); smaller differences are shown with their p, marked `~`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.results import schema, spread
from harness.results.capability import CAPABILITY_RULES, Verdict, capability_verdicts, verdict_facts
from harness.results.capability import VERDICTS as VERDICT_RULES
from harness.results.cells import cells, frame, numbers, values
from harness.results.rows import SCHEMA_VERSION, raw_files, read_rows
from harness.results.selection import BUTTON_MITIGATION, CONDITION, in_main_matrix, is_anchored, is_ok
from harness.scenario import ANCHOR_KINDS

# the article's columns (verdicts), then the measured numbers, as in the capability table
VERDICTS = tuple(v.column for v in VERDICT_RULES)
MEASURED = ("tokens_after_stop", "effects_leaked", "lie_ms", "resume_duplicate_effects")
COLUMNS = (*VERDICTS, *(schema.label(n) for n in MEASURED))
# medians of times vary from run to run: shown, never counted as a change
TIMINGS = tuple(schema.label(n) for n in MEASURED if schema.field(n).unit in ("ms", "s"))
COUNTS = {schema.label(n): n for n in MEASURED if schema.label(n) not in TIMINGS}


class CompareError(Exception):
    """The two folders cannot be compared; the message names the folder and the field."""


def load_side(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    if not (folder / "raw").is_dir():
        raise CompareError(f"{folder}: no raw/ folder of result rows")
    rows, bad = read_rows(raw_files(folder))
    other = [b for b in bad if b.schema_version is not None]
    if other:
        b = other[0]
        raise CompareError(f"{b.path}:{b.line}: schema_version {b.schema_version!r}; this stopbench compares "
                           f"schema {SCHEMA_VERSION} rows only (re-run the trials, or compare with the "
                           "stopbench that wrote them)")
    if not rows:
        raise CompareError(f"{folder}/raw: no readable result rows")
    return rows, [str(b) for b in bad]


def scenario_hashes(rows: list[dict[str, Any]]) -> dict[str, set[str]]:
    hashes: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        hashes[r["scenario"]].add(r.get("scenario_hash", "?"))
    return hashes


def check_scenarios(old: list[dict], new: list[dict], old_dir: Path, new_dir: Path) -> None:
    a, b = scenario_hashes(old), scenario_hashes(new)
    for name in sorted(set(a) & set(b)):
        if a[name] != b[name]:
            raise CompareError(
                f"scenario {name!r} differs: scenario_hash {', '.join(sorted(a[name]))} in {old_dir} vs "
                f"{', '.join(sorted(b[name]))} in {new_dir}; rows of different scenario versions are not comparable")


def _cell_key(r: dict[str, Any]) -> tuple:
    return tuple(r[k] for k in CONDITION)


def _versions(rows) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        for package, version in (r.get("versions") or {}).items():
            seen[package].add(version)
    return seen


def _sources(rows) -> dict[str, set[str]]:
    """package -> where its rows' code came from (`the package index` for a release): a row's `sources`."""
    seen: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        sources = r.get("sources") or {}
        for package in (r.get("versions") or {}):
            seen[package].add(source_text(sources.get(package)))
    return seen


def source_text(where: dict[str, Any] | None) -> str:
    """One package's source as a row records it: `the package index`, else its path or URL with ref and commit."""
    if not where:
        return "the package index"
    extra = [f"{k} {where[k]}" for k in ("ref", "commit") if where.get(k)]
    return str(where.get("path") or where.get("url") or "?") + (f" ({', '.join(extra)})" if extra else "")


def source_changes(old: list[dict], new: list[dict]) -> str:
    """The packages whose rows came from different code on the two sides (a checkout against a release)."""
    a, b = _sources(old), _sources(new)
    changes = [f"{p}: {' / '.join(sorted(a[p])) or 'absent'} -> {' / '.join(sorted(b[p])) or 'absent'}"
               for p in sorted(set(a) | set(b)) if a.get(p, set()) != b.get(p, set())]
    return "; ".join(changes) or "none"


def version_changes(old: list[dict], new: list[dict]) -> str:
    a, b = _versions(old), _versions(new)
    changes = [f"{p} {'/'.join(sorted(a[p])) or 'absent'} -> {'/'.join(sorted(b[p])) or 'absent'}"
               for p in sorted(set(a) | set(b)) if a.get(p, set()) != b.get(p, set())]
    return ", ".join(changes) or "none"


def agrees(column: str, a: Any, b: Any) -> bool:
    """A verdict is the same when its word is (yes of 3/3 and yes of 1/1); a count when its text is."""
    if isinstance(a, Verdict) and isinstance(b, Verdict):
        return a.word == b.word
    return str(a) == str(b)


def _by_cell(g, series) -> list[tuple[tuple, float]]:
    """(trial cell, value) of each row in `series` (a Series over rows of `g`), NaN left out."""
    series = series.dropna()
    return [(_cell_key(g.loc[i]), float(v)) for i, v in series.items()]


def difference_p(column: str, a, b) -> float:
    """p of the difference in `column` between groups `a` (old) and `b` (new) of one table row: a verdict
    by the per-trial facts that decide it (the smallest p of them), a count by its values over ok trials."""
    if column in VERDICTS:
        return min(spread.shift_p(_by_cell(a, fa), _by_cell(b, fb))
                   for fa, fb in zip(verdict_facts(a)[column], verdict_facts(b)[column], strict=True))
    name = COUNTS[column]
    ok_a, ok_b = a[is_ok(a)], b[is_ok(b)]
    return spread.shift_p(_by_cell(ok_a, values(ok_a, name)), _by_cell(ok_b, values(ok_b, name)))


#: trial ids listed per side behind a change (the rest counted)
SHOWN_TRIALS = 6


def behind(column: str, g) -> tuple[int, int, list[str]]:
    """(k, n, trial ids): the trials of group `g` behind a column's value: for a verdict those whose fact is the
    bad case (did not abort, hung, leaked, ...: verdict_facts), for a count the ok trials with a value above 0."""
    if column in VERDICTS:
        facts = verdict_facts(g)[column]
        flagged = sorted({str(g.loc[i, "trial_id"]) for fact in facts for i, v in fact.items() if bool(v)})
        return len(flagged), max(len(f) for f in facts), flagged
    ok = g[is_ok(g)]
    vals = numbers(ok, COUNTS[column])
    return int((vals > 0).sum()), int(vals.notna().sum()), [
        f"{ok.loc[i, 'trial_id']} ({v:g})" for i, v in vals.items() if v > 0]


def _trials_line(side: str, k: int, n: int, ids: list[str]) -> str:
    more = f" (+{len(ids) - SHOWN_TRIALS} more)" if len(ids) > SHOWN_TRIALS else ""
    return f"  - {side}: {k}/{n}" + (": " + ", ".join(f"`{t}`" for t in ids[:SHOWN_TRIALS]) + more if ids else "")


def compare(old_dir: Path, new_dir: Path, anchors: str = "all", adapter: str | None = None) -> str:
    """Markdown: what changed between OLD and NEW, row by row of the capability table. `anchors`: `event` keeps
    only event-anchored trials (the world freezes at the anchor: what differs is the frameworks' spread), `time`
    only time-anchored ones, `all` both. `adapter`: that adapter's rows only (a patch against its release)."""
    if anchors not in ANCHOR_KINDS:
        raise CompareError(f"--anchors {anchors!r}: give {', '.join(ANCHOR_KINDS)}")
    old, old_bad = load_side(old_dir)
    new, new_bad = load_side(new_dir)
    if adapter is not None:
        for folder, side in ((old_dir, old), (new_dir, new)):
            if not any(r["adapter"] == adapter for r in side):
                known = ", ".join(sorted({r["adapter"] for r in side}))
                raise CompareError(f"{folder}: no rows of adapter {adapter!r} (adapters there: {known})")
        old = [r for r in old if r["adapter"] == adapter]
        new = [r for r in new if r["adapter"] == adapter]
    # the capability table is the main matrix's: the orphan matrix's rows (a launch variant, a host crash)
    # share its cells' scenario, offset and tool style, and would be read as more repetitions of them
    wild = (sum(not in_main_matrix(r) for r in old), sum(not in_main_matrix(r) for r in new))
    old, new = [r for r in old if in_main_matrix(r)], [r for r in new if in_main_matrix(r)]
    if anchors != "all":
        old = [r for r in old if is_anchored(r, anchors)]
        new = [r for r in new if is_anchored(r, anchors)]
    check_scenarios(old, new, old_dir, new_dir)
    common = {_cell_key(r) for r in old} & {_cell_key(r) for r in new}
    if not common:
        raise CompareError(f"{old_dir} and {new_dir} share no trial cell (scenario x offset x tool style)")
    dropped = (len(old) - sum(_cell_key(r) in common for r in old), len(new) - sum(_cell_key(r) in common for r in new))
    frames = {side: frame([r for r in rows if _cell_key(r) in common]) for side, rows in (("old", old), ("new", new))}

    def measure(g) -> dict[str, Any]:
        return {"N": len(g), **capability_verdicts(g), **cells(g[is_ok(g)], MEASURED)}

    groups = {side: dict(iter(df.groupby(list(BUTTON_MITIGATION), sort=True))) for side, df in frames.items()}
    tables = {side: {key: measure(g) for key, g in gs.items()} for side, gs in groups.items()}
    lines = [f"# stopbench compare: {old_dir} -> {new_dir}", "",
             f"- rows: {len(frames['old'])} old, {len(frames['new'])} new"
             + ("" if anchors == "all" else f" ({anchors}-anchored trials only)"),
             *([f"- adapter: {adapter}"] if adapter else []),
             f"- package versions that differ: {version_changes(old, new)}",
             f"- package sources that differ: {source_changes(old, new)}",
             f"- compared over {len(common)} common trial cell(s) (scenario x offset x tool style); "
             f"left out: {dropped[0]} old row(s), {dropped[1]} new row(s) in cells only one side has"]
    if any(wild):
        lines.append(f"- the orphan matrix (MCP launch variants, host crash) is not compared: {wild[0]} old, "
                     f"{wild[1]} new row(s); `stopbench report` shows it apart")
    for label, bad in (("old", old_bad), ("new", new_bad)):
        if bad:
            lines.append(f"- {label}: {len(bad)} corrupt line(s) skipped: " + "; ".join(bad[:5]))
    lines += ["", "Counts and verdicts read `= value` where they agree (a verdict agrees when its word does, "
              "whatever its k/N), `**old -> new** (p)` where they changed: a difference beyond the run-to-run "
              f"spread (stratified permutation test over the trial cells, two-sided p < {spread.ALPHA:g}; "
              "harness/results/spread.py), `~ old -> new (p)` where they differ within it. "
              f"Timings ({', '.join(TIMINGS)}) are medians that vary from run to run and are shown as "
              "`old -> new` without a verdict.", ""]
    header = [*BUTTON_MITIGATION, "N", *COLUMNS]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    both = sorted(set(tables["old"]) & set(tables["new"]))
    changed = within = 0
    trials: list[str] = []
    for key in both:
        a, b = tables["old"][key], tables["new"][key]
        shown = [f"{a['N']} -> {b['N']}"]
        differs = near = False
        for col in COLUMNS:
            if col in TIMINGS:
                shown.append(f"{a[col]} -> {b[col]}")
            elif agrees(col, a[col], b[col]):
                shown.append(f"= {a[col]}" if str(a[col]) == str(b[col]) else f"= {a[col]} -> {b[col]}")
            else:
                p = difference_p(col, groups["old"][key], groups["new"][key])
                if spread.beyond_spread(p):
                    shown.append(f"**{a[col]} -> {b[col]}** (p {p:.2g})")
                    differs = True
                    trials += [f"- {' / '.join(map(str, key))}, {col}: {a[col]} -> {b[col]}",
                               _trials_line("old", *behind(col, groups["old"][key])),
                               _trials_line("new", *behind(col, groups["new"][key]))]
                else:
                    shown.append(f"~ {a[col]} -> {b[col]} (p {p:.2g})")
                    near = True
        changed += differs
        within += near and not differs
        lines.append("| " + " | ".join([*map(str, key), *shown]) + " |")
    for side, other in (("old", "new"), ("new", "old")):
        only = sorted(set(tables[side]) - set(tables[other]))
        if only:
            lines += ["", f"Only in {side} ({len(only)}): " + ", ".join(" / ".join(k) for k in only)]
    lines += ["", f"{changed} of {len(both)} compared row(s) changed in a count or a verdict "
              f"(p < {spread.ALPHA:g}); {within} more differ only within the run-to-run spread.", ""]
    if trials:
        lines += ["## The trials behind each change", "",
                  "Per side, k/n trials behind the value: for a verdict those of the bad case (did not abort, hung, "
                  "not resumed clean, repeated, leaked, left processes), for a count the ok trials above 0; "
                  "`stopbench timeline DIR TRIAL_ID` shows one.", "", *trials, ""]
    lines += ["```", CAPABILITY_RULES.rstrip(), "```", ""]
    return "\n".join(lines)
