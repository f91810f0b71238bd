"""Table building blocks shared by the report and `stopbench compare`: a frame of rows, and a field's cell.

A cell summarizes one field over a group of rows the way harness/results/schema.py declares it
(its aggregation and rounding) under the field's column label. Needs pandas (the `report` extra).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.results import schema


def frame(rows: list[dict[str, Any]]):
    """Rows as a DataFrame: every declared column in the schema's order (a field an older row lacks has no
    value there, as `-` in a table), then any undeclared ones."""
    import pandas as pd

    df = pd.DataFrame(rows)
    return df.reindex(columns=schema.columns([*schema.FIELDS, *df.columns]))


def median_cell(series) -> str:
    """`v` when every row agrees, else `median (min..max)`; `-` when no row has a value."""
    vals = series.dropna()
    if vals.empty:
        return "-"
    lo, hi, med = vals.min(), vals.max(), vals.median()
    if lo == hi:
        return f"{lo:g}"
    return f"{med:g} ({lo:g}..{hi:g})"


def ratio_cell(series) -> str:
    """`k/N`: rows where the field is true, of the rows that have it; `-` when none has."""
    vals = series.dropna()
    if vals.empty:
        return "-"
    return f"{int(vals.astype(bool).sum())}/{len(vals)}"


def values(rows, name: str):
    """The values of field `name` a cell summarizes: a timing only from trials whose stop fired on time."""
    f = schema.field(name)
    vals = rows[name]
    if f.precise_only and "trigger_precise" in rows:  # a late stop distorts a timing, not a count
        vals = vals[rows["trigger_precise"] != False]  # noqa: E712 (None = no stop: kept, its value is None)
    return vals


def cell(rows, name: str) -> str:
    """Field `name` summarized over `rows` (a DataFrame) as the schema declares it."""
    f = schema.field(name)
    values_ = values(rows, name)
    if f.aggregation == "ratio":
        return ratio_cell(values_)
    if f.aggregation == "median":
        return median_cell(values_.round(f.digits) if f.digits is not None else values_)
    raise ValueError(f"{name!r} is not summarized in a table (aggregation none)")


def cells(rows, names: Iterable[str]) -> dict[str, str]:
    """{column label: cell} for each field, in the order given."""
    return {schema.label(n): cell(rows, n) for n in names}


def min_max(series) -> str:
    return f"{series.min():g}..{series.max():g}"
