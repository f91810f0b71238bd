"""HTML building blocks the site's pages share (harness/results/site.py and history.py): file names and tables."""

from __future__ import annotations

import html
import re


def slug(*parts: str) -> str:
    """A file name for an adapter / mode / framework: letters, digits, - and _ only."""
    return "--".join(re.sub(r"[^A-Za-z0-9_-]+", "_", p) for p in parts)


def html_table(df, root: str = "") -> str:
    """A pandas table as a sortable HTML table (site.js sorts any table.sortable by a header click). Where a
    line names an adapter and a mode, the mode links to that button's page: every cell leads to its trials."""
    if df is None or df.empty:
        return "<p class=none>none</p>"
    shown = df.astype(object).map(lambda v: html.escape(str(v)) if v is not None and v == v else "")
    if {"adapter", "mode"} <= set(df.columns):
        shown["mode"] = [f'<a href="{root}buttons/{slug(a, m)}.html">{html.escape(str(m))}</a>'
                         for a, m in zip(df["adapter"], df["mode"], strict=True)]
    return shown.to_html(index=False, escape=False, classes="sortable", border=0)
