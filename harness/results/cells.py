"""Table building blocks shared by the report, the scorecard, `stopbench compare` and the history: a frame of
rows, a column as numbers, the median, and a field's cell.

A cell summarizes one field over a group of rows the way harness/results/schema.py declares it (its
aggregation, rounding and format) under the field's column label. Needs pandas (the `report` extra).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.results import schema
from harness.results.selection import is_late


def frame(rows: list[dict[str, Any]]):
    """Rows as a DataFrame: every declared column in the schema's order (a field an older row lacks has no
    value there, as `-` in a table), then any undeclared ones."""
    import pandas as pd

    df = pd.DataFrame(rows)
    # text as Python objects: pandas 3 stores it in Arrow arrays, which made every small frame a table is read from
    # (a button's trials, a condition's) cost a pyarrow call per column: the report's tables took 2.6 x the CPU
    text = {c: object for c, dtype in df.dtypes.items() if isinstance(dtype, pd.StringDtype)}
    return df.astype(text).reindex(columns=schema.columns([*schema.FIELDS, *df.columns]))


def numbers(df, name: str):
    """A column as numbers, None as NaN (NaN everywhere when absent): an all-None column is not numeric
    otherwise, and hand-written or older rows may lack a field."""
    import pandas as pd

    if name not in df:
        return pd.Series(float("nan"), index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def median(series) -> float | None:
    """The median of the values a series has; None when it has none. Every table cell and the scorecard
    take their medians from here."""
    vals = series.dropna()
    return None if vals.empty else float(vals.median())


def median_cell(series, f: schema.Field) -> str:
    """`v` when every row agrees, else `median (min..max)`; `-` when no row has a value."""
    vals = series.dropna()
    if vals.empty:
        return schema.NO_VALUE
    return f.median_text(median(vals), vals.min(), vals.max())


def ratio_cell(series) -> str:
    """`k/N`: rows where the field is true, of the rows that have it; `-` when none has."""
    vals = series.dropna()
    if vals.empty:
        return schema.NO_VALUE
    return schema.ratio_text(int(vals.astype(bool).sum()), len(vals))


def values(rows, name: str):
    """The values of field `name` a cell summarizes: a timing only from trials whose stop fired on time."""
    f = schema.field(name)
    vals = rows[name]
    if f.precise_only and "trigger_precise" in rows:  # a late stop distorts a timing, not a count
        vals = vals[~is_late(rows)]  # None = no stop: kept, its value is None
    return vals


def cell(rows, name: str) -> str:
    """Field `name` summarized over `rows` (a DataFrame) as the schema declares it."""
    f = schema.field(name)
    values_ = values(rows, name)
    if f.aggregation == "ratio":
        return ratio_cell(values_)
    if f.aggregation == "median":
        return median_cell(values_.round(f.digits) if f.digits is not None else values_, f)
    raise ValueError(f"{name!r} is not summarized in a table (aggregation none)")


def cells(rows, names: Iterable[str]) -> dict[str, str]:
    """{column label: cell} for each field, in the order given."""
    return {schema.label(n): cell(rows, n) for n in names}


def min_max(rows, name: str) -> str:
    """`min..max` of field `name` over `rows`."""
    return schema.field(name).range_text(rows[name].min(), rows[name].max())
