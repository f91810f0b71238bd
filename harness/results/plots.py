"""The report's plots, drawn to fit the data: categories are never joined by lines, counts are heatmaps of
framework-mode x anchor (the number written in each cell), timings are points on a linear axis in ms. One
colour per framework everywhere (`framework_colors`), units on every axis. PNG with a 64-colour palette: a
few tens of KB where the SVG of thousands of points was megabytes, and the same rows draw the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.results.selection import is_anchored, is_late, is_measured, is_ok

#: pixels per inch of every plot, and the smallest font on one (points): labels stay readable at 1:1
DPI = 90
FONT = 9
#: the palette of a plot's PNG: enough for the colour scales and anti-aliased text, a third of the bytes of RGB
COLOURS = 64

# tab10 without its grey: ten frameworks, each its own colour, on every plot and page
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
           "#aec7e8")


def framework_colors(frameworks) -> dict[str, str]:
    """framework -> colour, by sorted name: the same framework gets the same colour on every page."""
    return {fw: PALETTE[i % len(PALETTE)] for i, fw in enumerate(sorted(set(frameworks)))}


def _who(rows):
    rows = rows.copy()
    rows["who"] = rows["adapter"] + " / " + rows["mode"]
    rows["where"] = rows["scenario"] + " " + rows["offset"].str.replace("on:", "", regex=False)
    return rows


def _base(df):
    return _who(df[is_ok(df) & (df["mitigation"] == "none")])


def _heatmap(ev, heat, text, title: str, unit: str, cmap: str, to: Path, log: bool) -> Path | None:
    """One cell per button x event anchor: `heat` its colour (a frame: who x where), `text` what it says."""
    import matplotlib.pyplot as plt
    import numpy as np

    values = heat.values.astype(float)
    fig, ax = plt.subplots(figsize=(max(8, 0.62 * heat.shape[1] + 5), max(3, 0.2 * heat.shape[0] + 2.6)))
    shown = np.log10(1 + values) if log else values  # a count: on a log scale (0 stays white)
    top = max(1.0, float(np.nanmax(shown))) if log else 1.0
    im = ax.imshow(shown, aspect="auto", cmap=cmap, vmin=0, vmax=top, interpolation="nearest")
    ax.set_xticks(range(heat.shape[1]), heat.columns, rotation=45, ha="right", fontsize=FONT)
    ax.set_yticks(range(heat.shape[0]), heat.index, fontsize=FONT - 1)
    for (i, j), v in np.ndenumerate(values):
        if v == v:  # not NaN: no trial there
            ax.text(j, i, text.iat[i, j], ha="center", va="center", fontsize=FONT - 2,
                    color="white" if shown[i, j] > 0.6 * top else "black")
    cbar = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    if log:
        ticks = [t for t in (0, 1, 10, 100, 1000, 10000) if np.log10(1 + t) <= top]
        cbar.set_ticks([np.log10(1 + t) for t in ticks], labels=[str(t) for t in ticks])
    cbar.set_label(unit, fontsize=FONT)
    ax.set_xlabel("scenario and event anchor", fontsize=FONT)
    ax.set_ylabel("adapter / stop mode", fontsize=FONT)
    ax.set_title(title, fontsize=FONT + 2)
    return save(fig, to)


def _tokens_heatmap(ok, to: Path) -> Path | None:
    ev = ok[is_anchored(ok, "event")]
    if ev.empty:
        return None
    heat = ev.groupby(["who", "where"])["tokens_after_stop"].median().unstack("where")
    text = heat.map(lambda v: f"{v:g}" if v == v else "")
    return _heatmap(ev, heat, text, "Tokens generated after the stop (median of the ok trials of each cell)",
                    "tokens after stop (log colour scale)", "Blues", to, log=True)


def _leaks_heatmap(df, to: Path) -> Path | None:
    rows = _who(df[(df["mitigation"] == "none") & is_measured(df) & is_anchored(df, "event")
                   & df["effects_leaked"].notna()])
    if rows.empty:
        return None
    rows["leak"] = rows["effects_leaked"] > 0
    g = rows.groupby(["who", "where"])["leak"]
    heat = g.mean().unstack("where")
    k, n = g.sum().unstack("where"), g.size().unstack("where")
    text = k.combine(n, lambda a, b: a.astype("Int64").astype(str) + "/" + b.astype("Int64").astype(str))
    text = text.where(n.notna(), "")
    return _heatmap(rows, heat, text, "Trials that leaked an effect (k of the N trials of each cell, every status)",
                    "share of trials that leaked", "Reds", to, log=False)


def _lie_strip(ok, colors: dict[str, str], to: Path) -> Path | None:
    import matplotlib.pyplot as plt
    import numpy as np

    timed = ok[~is_late(ok) & ok["lie_ms"].notna()]  # late stops: out
    if timed.empty:
        return None
    groups = sorted(timed.groupby("who"), key=lambda kv: kv[0])
    fig, ax = plt.subplots(figsize=(10, max(3, 0.2 * len(groups) + 1.5)))
    rng = np.random.default_rng(0)
    for i, (_who, g) in enumerate(groups):
        fw = g["framework"].iloc[0]
        y = i + rng.uniform(-0.25, 0.25, len(g))
        ax.scatter(g["lie_ms"], y, s=6, alpha=0.5, color=colors.get(fw, "#333"), linewidths=0)
        ax.plot([g["lie_ms"].median()] * 2, [i - 0.35, i + 0.35], color="black", linewidth=1.5)
    ax.set_yticks(range(len(groups)), [w for w, _ in groups], fontsize=FONT - 1)
    ax.invert_yaxis()
    ax.set_xlabel("lie ms: from stop() returning to the run's last action (ms; black bar = median)", fontsize=FONT)
    ax.set_ylabel("adapter / stop mode", fontsize=FONT)
    ax.set_title("How long each stop button lies (every ok trial, one point each)", fontsize=FONT + 2)
    ax.grid(True, axis="x", alpha=0.3)
    return save(fig, to)


def write_plots(df, to: Path) -> list[Path]:
    """The report's plots (PNG) into `to`: leaks and tokens heatmaps, lie ms strip plot."""
    import matplotlib

    matplotlib.use("Agg")
    ok = _base(df)
    if ok.empty:
        return []
    colors = framework_colors(df["framework"])
    drawn = [
        _leaks_heatmap(df, to / "effects_leaked.png"),
        _tokens_heatmap(ok, to / "tokens_after_stop.png"),
        _lie_strip(ok, colors, to / "lie_ms.png"),
    ]
    return [p for p in drawn if p is not None]


def save(fig: Any, path: Path) -> Path:
    """`fig` as a PNG of at most COLOURS colours at DPI, nothing cut off, no date or version in it: the same figure
    gives the same bytes."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    buf.seek(0)
    with Image.open(buf) as image:
        image.convert("RGB").quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT).save(path, format="PNG",
                                                                                         optimize=True)
    return path


