"""The version history (issue #22): each stop button across a framework's releases, asv-style.

`nox -s history` runs a small fixed matrix (noxfile HISTORY_MATRIX) once per release of each framework that
declares `[history]` in its framework.toml, each release in its own environment, into
results/history/<framework>/<release>/raw/ (apart from the headline run: its trial ids repeat per release).
This reads those folders and writes results/history/: a page per framework with the capability cells per
release, tokens and leaks per release as plots, and "changed in X.Y" notes where a count or verdict changed
between consecutive releases beyond the run-to-run spread (the test `stopbench compare` uses), each naming
the rows behind it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.frameworks import release_key
from harness.results import schema, spread
from harness.results.capability import capability_verdicts, texts
from harness.results.cells import cells, frame, numbers
from harness.results.compare import COUNTS, VERDICTS, agrees, difference_p
from harness.results.markup import html_table, slug
from harness.results.rows import raw_files, read_rows
from harness.results.selection import CONDITION, is_ok, is_unsupported, without

#: the columns of a release's line (capability verdicts, then medians over ok trials)
SHOWN = ("can abort", "state kept", "can resume", "repeats effect", "orphans clean")
NUMBERS = ("tokens_after_stop", "effects_leaked")


def load_history(folder: Path):
    """Every history row under `folder` (<framework>/<release>/raw/, JSON Lines or dataset files), with its
    `release`; None when there is none. Unreadable lines are returned apart, as by read_rows."""
    rows, bad = [], []
    for raw in sorted(folder.glob("*/*/raw")) if folder.is_dir() else []:
        got, unreadable = read_rows(raw_files(raw.parent))
        rows += [{**r, "release": raw.parent.name, "history_of": raw.parent.parent.name} for r in got]
        bad += unreadable
    return (frame(rows) if rows else None), bad


def _releases(df) -> list[str]:
    return sorted(df["release"].unique(), key=release_key)


def release_table(df):
    """One line per mode x release: trials, unsupported, the verdicts and the medians of tokens+ and leaked."""
    import pandas as pd

    varying = _varying_packages(df)
    out: list[dict[str, Any]] = []
    for mode, g in df.groupby("mode", sort=True):
        for release in _releases(g):
            r = g[g["release"] == release]
            line: dict[str, Any] = {"mode": mode, "release": release, "trials": len(r)}
            if is_unsupported(r).all():
                line.update({c: "unsupported" for c in (*SHOWN, *map(schema.label, NUMBERS))})
            else:
                cap = texts(capability_verdicts(r))
                line.update({c: cap[c] for c in SHOWN})
                line.update(cells(r[is_ok(r)], NUMBERS))
            line["versions"] = ", ".join(sorted({f"{k} {v}" for vs in r["versions"] for k, v in (vs or {}).items()
                                                 if k in varying}))
            out.append(line)
    return pd.DataFrame(out)


def _varying_packages(df) -> set[str]:
    """The packages whose version is not the same in every release (the walked one, and what it pulled in)."""
    seen: dict[str, set[str]] = {}
    for vs in df["versions"]:
        for k, v in (vs or {}).items():
            seen.setdefault(k, set()).add(v)
    return {k for k, v in seen.items() if len(v) > 1}


def same_versions(df) -> str:
    """The packages every release ran with at one version, for the page's text."""
    varying = _varying_packages(df)
    same = sorted({f"{k} {v}" for vs in df["versions"] for k, v in (vs or {}).items() if k not in varying})
    return ", ".join(same) or "none"


def changes(df, links: Callable[[str], list[tuple[str, str]]] | None = None) -> list[dict[str, Any]]:
    """"changed in X.Y" notes: for each mode, each pair of consecutive releases, each verdict or count whose
    difference is beyond the run-to-run spread (harness/results/compare.py difference_p), with the trial cells
    that differ, the other packages whose version changed between the two releases (a possible cause) and, with
    `links` (release -> [(name, href)]), links to the rows of both. A note: {mode, text, cause, links}."""
    notes = []
    for mode, g in df.groupby("mode", sort=True):
        releases = _releases(g)
        for old, new in zip(releases, releases[1:], strict=False):
            a, b = g[g["release"] == old], g[g["release"] == new]
            a_ok, b_ok = a[~is_unsupported(a)], b[~is_unsupported(b)]
            where = [*(links(old) if links else []), *(links(new) if links else [])]
            cause = _dependency_changes(g, old, new)
            if a_ok.empty != b_ok.empty:
                notes.append({"mode": mode, "text": f"{mode}: {'appeared' if a_ok.empty else 'gone'} in {new} "
                              f"({len(b_ok) if a_ok.empty else len(a_ok)} trials)", "cause": cause, "links": where})
                continue
            if a_ok.empty:
                continue
            ca, cb = _measured(a_ok), _measured(b_ok)
            for col in (*VERDICTS, *COUNTS):
                if agrees(col, ca[col], cb[col]):
                    continue
                p = difference_p(col, a_ok, b_ok)
                if spread.beyond_spread(p):
                    notes.append({"mode": mode, "text": (
                        f"{mode}: {col} changed in {new}: {ca[col]} -> {cb[col]}{_means(col, a_ok, b_ok)} "
                        f"(p {p:.2g}; {len(a_ok)} trials of {old}, {len(b_ok)} of {new}; "
                        f"{_cells_behind(col, a_ok, b_ok)})"), "cause": cause, "links": where})
    return notes


def _means(col: str, a, b) -> str:
    """A count's mean per ok trial on each side: what the spread test compares (two medians can be equal)."""
    if col not in COUNTS:
        return ""
    ma, mb = (numbers(x[is_ok(x)], COUNTS[col]).mean() for x in (a, b))
    return f" (mean per ok trial {ma:.3g} -> {mb:.3g})"


def _versions_of(g, release: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for vs in g.loc[g["release"] == release, "versions"]:
        out.update(vs or {})
    return out


def _dependency_changes(g, old: str, new: str) -> str:
    """The packages, other than the framework's own, whose version differs between two releases' rows."""
    va, vb = _versions_of(g, old), _versions_of(g, new)
    own = str(g["history_of"].iloc[0]).replace("_", "-").lower()
    moved = [f"{k} {va.get(k, 'none')} -> {vb.get(k, 'none')}" for k in sorted(set(va) | set(vb))
             if va.get(k) != vb.get(k) and k.replace("_", "-").lower() != own]
    return ", ".join(moved)


#: a trial cell of the history matrix: where a change is (its mode and release are the note's own; the matrix
#: runs one scenario, noxfile HISTORY_MATRIX)
CELL = without(CONDITION, "scenario")
SHOWN_CELLS = 4


def _measured(g) -> dict[str, Any]:
    """The verdicts and the counts of a group of trials, as a change is read between two of them."""
    return {**capability_verdicts(g), **cells(g[is_ok(g)], COUNTS.values())}


def _cells_behind(col: str, a, b) -> str:
    """The rows behind a change: the trial cells (offset x tool style) whose own value differs between the two
    releases, `offset/style old -> new`, at most SHOWN_CELLS of them."""
    old_cells, new_cells = dict(iter(a.groupby(list(CELL)))), dict(iter(b.groupby(list(CELL))))
    differ = []
    for key in sorted(set(old_cells) & set(new_cells)):
        va, vb = _measured(old_cells[key])[col], _measured(new_cells[key])[col]
        if not agrees(col, va, vb):
            differ.append(f"{'/'.join(key)} {va} -> {vb}")
    if not differ:
        return "no single cell differs: the change is spread over them"
    more = f" (+{len(differ) - SHOWN_CELLS} more)" if len(differ) > SHOWN_CELLS else ""
    return f"{len(differ)} cell(s): " + "; ".join(differ[:SHOWN_CELLS]) + more


def _plot(df, field: str, title: str, unit: str, to: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.results.plots import FONT, save

    ok = df[is_ok(df)]
    if ok.empty:
        return None
    releases = _releases(df)
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(releases) + 3), 3.2))
    for mode, g in ok.groupby("mode", sort=True):
        med = g.groupby("release")[field].median()
        xs = [i for i, r in enumerate(releases) if r in med.index]
        ax.plot(xs, [med[releases[i]] for i in xs], marker="o", label=mode)  # releases are ordered: a line
    ax.set_xticks(range(len(releases)), releases, fontsize=FONT)
    ax.set_xlabel("release", fontsize=FONT)
    ax.set_ylabel(f"{unit}, median over ok trials", fontsize=FONT)
    ax.set_title(f"{title} per release", fontsize=FONT + 1)
    ax.legend(fontsize=FONT - 1, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save(fig, to)


def write_history(history_dir: Path, out: Path, env, common: dict[str, Any]) -> list[Path]:
    """history/index.html and history/<framework>.html (with PNG plots) into `out`; [] when there is no history."""
    df, _ = load_history(history_dir)
    shown = Path(os.path.relpath(history_dir.resolve(), out.resolve().parent)).as_posix()  # as the report names it
    if df is None:
        return []
    pages_dir = out / "history"
    pages_dir.mkdir(parents=True, exist_ok=True)
    written = []
    frameworks = []
    for fw, g in df.groupby("history_of", sort=True):
        plots = [p.name for p in (_plot(g, "tokens_after_stop", "tokens after the stop", "tokens",
                                        pages_dir / f"{slug(fw)}-tokens.png"),
                                  _plot(g, "effects_leaked", "effects leaked", "effects",
                                        pages_dir / f"{slug(fw)}-leaked.png")) if p]

        def rows_of(release: str, fw: str = fw) -> list[tuple[str, str]]:
            """The release's rows folder (JSON Lines or the published dataset: the page reads the same)."""
            raw = history_dir / fw / release / "raw"
            return [(f"{release} rows", os.path.relpath(raw.resolve(), pages_dir.resolve()) + "/")
                    ] if raw_files(raw.parent) else []

        changed = changes(g, rows_of)
        page = pages_dir / f"{slug(fw)}.html"
        shas = ", ".join(sorted({str(x)[:7] for x in g["git_sha"].dropna()})) if "git_sha" in g else "?"
        footer = {**common["notes"], "footer": f"{len(g):,} history rows of {fw} ({len(_releases(g))} releases; "
                  f"apart from the headline trials). Generated by `stopbench report` from "
                  f"{shown}/{fw}/<release>/raw/ (history rows measured at {shas})."}
        page.write_text(env.get_template("history.html.j2").render(
            **{**common, "notes": footer}, root="../", framework=fw, releases=_releases(g),
            changed=changed, plots=plots, same_versions=same_versions(g),
            table=html_table(release_table(g)), n_rows=len(g)))
        written.append(page)
        frameworks.append({"name": fw, "page": page.name, "releases": _releases(g), "changes": len(changed)})
    index = pages_dir / "index.html"
    footer = {**common["notes"], "footer": f"{len(df):,} history rows of {len(frameworks)} frameworks, apart from "
              f"the headline trials. Generated by `stopbench report` from {shown}/."}
    index.write_text(env.get_template("history_index.html.j2").render(
        **{**common, "notes": footer}, root="../", frameworks=frameworks))
    return [index, *written]
