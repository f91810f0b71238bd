"""The report's plots, drawn to fit the data: categories are never joined by lines, counts are heatmaps of
framework-mode x anchor (the number written in each cell), timings are points on a linear axis in ms. One
colour per framework everywhere (`framework_colors`), units on every axis. SVG: sharp at any zoom, small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.results.selection import is_anchored, is_late, is_ok

# tab10 without its grey: ten frameworks, each its own colour, on every plot and page
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
           "#aec7e8")


def framework_colors(frameworks) -> dict[str, str]:
    """framework -> colour, by sorted name: the same framework gets the same colour on every page."""
    return {fw: PALETTE[i % len(PALETTE)] for i, fw in enumerate(sorted(set(frameworks)))}


def _base(df):
    ok = df[is_ok(df) & (df["mitigation"] == "none")].copy()
    ok["who"] = ok["adapter"] + " / " + ok["mode"]
    ok["where"] = ok["scenario"] + " " + ok["offset"]
    return ok


def _heatmap(ok, field: str, title: str, unit: str, cmap: str, to: Path) -> Path | None:
    import matplotlib.pyplot as plt
    import numpy as np

    ev = ok[is_anchored(ok, "event")]
    if ev.empty:
        return None
    heat = ev.groupby(["who", "where"])[field].median().unstack("where")
    values = heat.values.astype(float)
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * heat.shape[1] + 4), max(3, 0.28 * heat.shape[0] + 2)))
    shown = np.log10(1 + values)  # colour on a log scale (0 stays white); the cell says the number
    im = ax.imshow(shown, aspect="auto", cmap=cmap, vmin=0, vmax=max(1.0, float(np.nanmax(shown))))
    ax.set_xticks(range(heat.shape[1]), heat.columns, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(heat.shape[0]), heat.index, fontsize=7)
    for (i, j), v in np.ndenumerate(values):
        if v == v:  # not NaN: no ok trial there
            ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=6,
                    color="white" if shown[i, j] > 0.6 * max(1.0, float(np.nanmax(shown))) else "black")
    cbar = fig.colorbar(im, ax=ax)
    ticks = [t for t in (0, 1, 10, 100, 1000, 10000) if np.log10(1 + t) <= max(1.0, float(np.nanmax(shown)))]
    cbar.set_ticks([np.log10(1 + t) for t in ticks], labels=[str(t) for t in ticks])
    cbar.set_label(unit)
    ax.set_xlabel("scenario and event anchor")
    ax.set_ylabel("adapter / stop mode")
    ax.set_title(title)
    fig.tight_layout()
    return _save(fig, to)


def _lie_strip(ok, colors: dict[str, str], to: Path) -> Path | None:
    import matplotlib.pyplot as plt
    import numpy as np

    timed = ok[~is_late(ok) & ok["lie_ms"].notna()]  # late stops: out
    if timed.empty:
        return None
    groups = sorted(timed.groupby("who"), key=lambda kv: kv[0])
    fig, ax = plt.subplots(figsize=(9, max(3, 0.3 * len(groups) + 1.5)))
    rng = np.random.default_rng(0)
    for i, (_who, g) in enumerate(groups):
        fw = g["framework"].iloc[0]
        y = i + rng.uniform(-0.25, 0.25, len(g))
        ax.scatter(g["lie_ms"], y, s=6, alpha=0.5, color=colors.get(fw, "#333"), linewidths=0)
        ax.plot([g["lie_ms"].median()] * 2, [i - 0.35, i + 0.35], color="black", linewidth=1.5)
    ax.set_yticks(range(len(groups)), [w for w, _ in groups], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("lie ms: from stop() returning to the run's last action (ms; black bar = median)")
    ax.set_title("How long each stop button lies (every ok trial, one point each)")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, to)


def write_plots(df, to: Path) -> list[Path]:
    """The report's plots (SVG) into `to`: tokens and leaks heatmaps, lie ms strip plot."""
    import matplotlib

    matplotlib.use("Agg")
    ok = _base(df)
    if ok.empty:
        return []
    colors = framework_colors(df["framework"])
    drawn = [
        _heatmap(ok, "tokens_after_stop", "Tokens generated after the stop (median of ok trials, event anchors)",
                 "tokens after stop (log colour scale)", "Blues", to / "tokens_after_stop.svg"),
        _heatmap(ok, "effects_leaked", "Side effects that landed after the stop and were never undone (median)",
                 "effects leaked (log colour scale)", "Reds", to / "effects_leaked.svg"),
        _lie_strip(ok, colors, to / "lie_ms.svg"),
    ]
    return [p for p in drawn if p is not None]


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, format="svg", metadata={"Date": None})  # no date: the same rows draw the same file
    plt.close(fig)
    return path
