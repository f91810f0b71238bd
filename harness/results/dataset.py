"""The published dataset: result rows and evidence as Parquet (zstd), the working JSON Lines compacted.

A run writes JSON Lines (append-only, safe to interrupt); `stopbench publish` compacts it into one Parquet
file per adapter next to them: `raw/<adapter>.parquet` (rows) and `evidence/<adapter>.parquet` (ledgers).
Every reader takes either (`read_rows`, `read_evidence` dispatch on the suffix), so a fresh clone reads the
dataset and a live run its lines.

Rows: one column per field, typed by the values it holds (a field with mixed types, or objects, as JSON
text); a field whose value is the same in every row of the file (versions, git sha, platform, python, ...)
is stored once, in the file's metadata, not in a column; `_absent` names the fields a row was written
without, so a row reads back exactly as it was. Evidence: one line per event (token events as they are,
not packed): its time as a gap to the event before it (tokens in microseconds, rounded to the millisecond where
no measure can tell: `as_published`), the event's name, `req` and `i`, and its other keys as JSON; a record's
keys beyond these (what its processes printed, `output`) as JSON on its first line. The metadata of each file
carries `FORMAT_VERSION` and, for rows, the row format's `schema_version`; a reader refuses a newer one than it
knows (`DatasetError`) rather than misread it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.results.migrations import NewerVersion, UnknownVersion, check_version

#: the layout of a dataset file (this module); a change to it is a new version and a reader of the old one
FORMAT_VERSION = 1
SUFFIX = ".parquet"
META_KEY = b"stopbench"
ABSENT = "_absent"  # the column naming, per row, the fields it was written without
#: zstd at its strongest: files are written once and read many times; no statistics (nothing filters by them)
WRITE_OPTIONS = {"compression": "zstd", "compression_level": 19, "write_statistics": False}
#: evidence columns and their types; any other key of an event is kept in `rest` (JSON)
EVENT_COLUMNS = ("record", "trial_id", "run_id", "dt", "event", "req", "i", "rest", "extra")
RECORD_KEYS = ("trial_id", "run_id", "events")  # a record's other keys (`output`) are kept in `extra` (JSON)


class DatasetError(ValueError):
    """A dataset file this stopbench cannot read (a newer format, another kind); the message names the file."""


def is_dataset_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


# --- rows ------------------------------------------------------------------------------------------------------

def _same(a: Any, b: Any) -> bool:
    """Equal as JSON writes them: 1, 1.0 and True are three values."""
    return type(a) is type(b) and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _arrow_type(values: list[Any]):
    """The Arrow type that gives these values back as they are, or None: store them as JSON text."""
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values if v is not None):
        return pa.int64()
    if kinds == {float}:
        return pa.float64()
    if kinds == {str}:
        return pa.string()
    return None


def _metadata(kind: str, **extra: Any) -> dict[bytes, bytes]:
    return {META_KEY: json.dumps({"format_version": FORMAT_VERSION, "kind": kind, **extra}, sort_keys=True).encode()}


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """`rows` (of the current row format) as one Parquet file; the fields equal in every row stored once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.results.schema import SCHEMA_VERSION

    keys = sorted({k for row in rows for k in row})
    constant = {k: rows[0][k] for k in keys
                if rows and all(k in row and _same(row[k], rows[0][k]) for row in rows)}
    columns: dict[str, Any] = {}
    as_json: list[str] = []
    for k in keys:
        if k in constant:
            continue
        values = [row.get(k) for row in rows]
        typ = _arrow_type(values)
        if typ is None:
            as_json.append(k)
            typ, values = pa.string(), [None if v is None else json.dumps(v, sort_keys=True) for v in values]
        columns[k] = pa.array(values, type=typ)
    absent = [",".join(k for k in keys if k not in row and k not in constant) or None for row in rows]
    columns[ABSENT] = pa.array(absent, type=pa.string())
    meta = _metadata("rows", schema_version=SCHEMA_VERSION, rows=len(rows), constant=constant, json_columns=as_json)
    table = pa.table(columns).replace_schema_metadata(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **WRITE_OPTIONS)


def file_metadata(path: Path, kind: str) -> dict[str, Any]:
    """The file's stopbench metadata, checked: a file of a newer format or row version is refused by name."""
    import pyarrow.parquet as pq

    try:
        raw = (pq.read_schema(path).metadata or {}).get(META_KEY)
    except (OSError, ValueError) as e:
        raise DatasetError(f"{path}: not a readable Parquet file ({e})") from None
    if raw is None:
        raise DatasetError(f"{path}: not a stopbench dataset file (no {META_KEY.decode()!r} metadata)")
    meta = json.loads(raw)
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise DatasetError(f"{path}: dataset format_version {version!r}; this stopbench reads format "
                           f"{FORMAT_VERSION} and older (upgrade stopbench to read it)")
    if meta.get("kind") != kind:
        raise DatasetError(f"{path}: a dataset file of {meta.get('kind')!r}, expected {kind!r}")
    if kind == "rows":
        try:
            check_version(meta.get("schema_version"), str(path))
        except (NewerVersion, UnknownVersion) as e:
            raise DatasetError(str(e)) from None
    return meta


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a rows file, as it was written (keys in sorted order, as the JSON Lines write them)."""
    import pyarrow.parquet as pq

    meta = file_metadata(path, "rows")
    table = pq.read_table(path)
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    for name in meta["json_columns"]:
        columns[name] = [None if v is None else json.loads(v) for v in columns[name]]
    absent = columns.pop(ABSENT)
    constant = meta["constant"]
    shared = {k: v for k, v in constant.items() if not isinstance(v, (dict, list))}
    copied = [k for k in constant if k not in shared]  # a reader may change a row's object: each row its own
    names = sorted([*columns, *constant])
    rows = []
    for i, gone in enumerate(absent):
        row = dict(shared, **{k: json.loads(json.dumps(constant[k])) for k in copied})
        row.update((name, values[i]) for name, values in columns.items())
        if gone:
            for name in gone.split(","):
                del row[name]
        rows.append({name: row[name] for name in names if name in row})
    return rows


# --- evidence --------------------------------------------------------------------------------------------------

def _int_or_none(v: Any) -> int | None:
    return v if type(v) is int else None


#: a token's time is kept to the microsecond (every other event's to the nanosecond): a token's nanoseconds are the
#: machine's scheduling noise around its slot (harness/world/model_api.py `Pacer`), about 10 of the 20 bits its
#: gap takes, and tokens are nine events in ten; no published row's measured field moves when they are rounded
#: (`stopbench rederive` derives every one the same). Not coarser: at 10 µs one published trial's tokens_after_stop
#: moves (a token 150 ns after the stop rounds to 3 µs before it). A file keeps its unit (`token_time_ns`) and is
#: read in it.
TOKEN_TIME_NS = 1000
TOKEN = "token"


def kept_time(e: dict[str, Any]) -> int:
    """The time the evidence keeps of event `e`: a token's rounded to TOKEN_TIME_NS (half up), any other's as is."""
    t = e["t"]
    return (t + TOKEN_TIME_NS // 2) // TOKEN_TIME_NS * TOKEN_TIME_NS if e.get("event") == TOKEN else t


def as_kept(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as the evidence keeps them (token times to TOKEN_TIME_NS)."""
    return [{**e, "t": kept_time(e)} if e.get("event") == TOKEN and type(e.get("t")) is int
            and e["t"] % TOKEN_TIME_NS else e for e in events]


#: a published token's time is rounded to the millisecond unless another moment of its trial lies between its time
#: and that millisecond, where it stays at TOKEN_TIME_NS. A token time enters a measure only as a side of a
#: comparison with such a moment (after the stop, in the resume, before a runaway's cut: harness/results/metrics.py),
#: which no rounding then crosses, so every measure derives the same from the published evidence as from the run's
#: (publish checks it); what a coarser token gives up is its place within the millisecond on a timeline. A token gap
#: then takes about a bit where it took ten (token events are nine in ten of a ledger).
TOKEN_ROUND_NS = 1_000_000


def _times_in(value: Any, lo: int, hi: int, into: list[int]) -> None:
    """Every whole number within [lo, hi] found in `value` (a deadline, an anchor's time in a mark's data)."""
    if type(value) is int:
        if lo <= value <= hi:
            into.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _times_in(v, lo, hi, into)
    elif isinstance(value, list):
        for v in value:
            _times_in(v, lo, hi, into)


def moments(events: list[dict[str, Any]]) -> list[int]:
    """The moments a token's time may be compared with, sorted: every other event's time and every time in its
    keys (within the ledger's span, widened by TOKEN_ROUND_NS)."""
    times = [e["t"] for e in events if type(e.get("t")) is int]
    if not times:
        return []
    lo, hi = min(times) - TOKEN_ROUND_NS, max(times) + TOKEN_ROUND_NS
    found: list[int] = []
    for e in events:
        if e.get("event") != TOKEN:
            _times_in(e, lo, hi, found)
    return sorted(set(found))


def as_published(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as the published evidence keeps them: as_kept, each token then to the millisecond where no moment
    of the ledger (`moments`) lies between its time and that millisecond (TOKEN_ROUND_NS). Applied twice, the
    same."""
    import bisect

    kept = as_kept(events)
    between = moments(kept)
    out = []
    for e in kept:
        t = e.get("t")
        if e.get("event") == TOKEN and type(t) is int:
            rounded = (t + TOKEN_ROUND_NS // 2) // TOKEN_ROUND_NS * TOKEN_ROUND_NS
            lo, hi = min(t, rounded), max(t, rounded)
            if rounded != t and bisect.bisect_left(between, lo) == bisect.bisect_right(between, hi):
                e = {**e, "t": rounded}
        out.append(e)
    return out


def write_evidence(path: Path, records: list[dict[str, Any]]) -> None:
    """Each record's events, one line per event (an empty record as one line without an event), times as gaps:
    the record's first line its time, then each token's gap to the token before it (or to the first line) in
    TOKEN_TIME_NS, each other event's gap to the other event before it (or to the first line) in ns: two
    regular series, each of small numbers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list[Any]] = {name: [] for name in EVENT_COLUMNS}
    for n, record in enumerate(records):
        last_ns = last_token = 0
        extra = {k: v for k, v in record.items() if k not in RECORD_KEYS}
        for k, e in enumerate(record["events"] or [{}]):
            if e and type(e.get("t")) is not int:
                raise DatasetError(f"{path}: trial {record['trial_id']}: an event without an integer time: {e!r:.80}")
            rest = {k: v for k, v in e.items()
                    if k not in ("t", "event") and not (k in ("req", "i") and type(v) is int)}
            if not e:
                gap = None
            elif k == 0:
                gap = last_ns = kept_time(e)
                last_token = last_ns // TOKEN_TIME_NS
            elif e.get("event") == TOKEN:
                gap, last_token = kept_time(e) // TOKEN_TIME_NS - last_token, kept_time(e) // TOKEN_TIME_NS
            else:
                gap, last_ns = e["t"] - last_ns, e["t"]
            cols["record"].append(n)
            cols["trial_id"].append(record["trial_id"])
            cols["run_id"].append(record["run_id"])
            cols["dt"].append(gap)
            cols["event"].append(e.get("event"))
            cols["req"].append(_int_or_none(e.get("req")))
            cols["i"].append(_int_or_none(e.get("i")))
            cols["rest"].append(json.dumps(rest, separators=(",", ":")) if rest else None)
            cols["extra"].append(json.dumps(extra, separators=(",", ":")) if extra and k == 0 else None)
    types = {"record": pa.int64(), "dt": pa.int64(), "req": pa.int64(), "i": pa.int64()}
    table = pa.table({name: pa.array(values, type=types.get(name, pa.string())) for name, values in cols.items()})
    table = table.replace_schema_metadata(_metadata("evidence", records=len(records), token_time_ns=TOKEN_TIME_NS,
                                                    token_round_ns=TOKEN_ROUND_NS))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, use_dictionary=["trial_id", "run_id", "event", "rest"],
                   column_encoding={"record": "DELTA_BINARY_PACKED", "dt": "BYTE_STREAM_SPLIT",
                                    "req": "DELTA_BINARY_PACKED", "i": "DELTA_BINARY_PACKED"}, **WRITE_OPTIONS)


def read_evidence(path: Path, run_ids: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every record of an evidence file, in order (only those of `run_ids` when given: the others are skipped
    before they are decoded)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    unit = file_metadata(path, "evidence").get("token_time_ns")
    if type(unit) is not int or unit < 1:
        raise DatasetError(f"{path}: token_time_ns {unit!r} is not a positive whole number of nanoseconds")
    table = pq.read_table(path)
    if run_ids is not None:
        table = table.filter(pc.is_in(table.column("run_id"), value_set=_string_array(run_ids)))
    times = _times(table, unit)
    cols = {name: table.column(name).to_pylist() for name in ("record", "trial_id", "run_id", "event", "req", "i",
                                                               "rest", "extra")}
    record: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    for k, (n, event, req, i, rest) in enumerate(zip(cols["record"], cols["event"], cols["req"], cols["i"],
                                                     cols["rest"], strict=True)):
        if record is None or n != cols["record"][k - 1]:
            if record is not None:
                yield record
            events = []
            record = {"trial_id": cols["trial_id"][k], "run_id": cols["run_id"][k], "events": events}
            if cols["extra"][k] is not None:
                record.update(json.loads(cols["extra"][k]))
        if event is None:
            continue
        e: dict[str, Any] = {"t": times[k], "event": event}
        if req is not None:
            e["req"] = req
        if i is not None:
            e["i"] = i
        if rest is not None:
            e.update(json.loads(rest))
        events.append(e)
    if record is not None:
        yield record


def _times(table, unit: int) -> list[int]:
    """Each event's time (`write_evidence`'s gaps summed): per record, the first line's time, then a running sum of
    the token gaps (in `unit` ns: the file's token_time_ns) and one of the other gaps (in ns), both from the first
    line's time."""
    import numpy as np

    gaps = table.column("dt").fill_null(0).to_numpy()
    records = table.column("record").to_numpy()
    token = (table.column("event").to_numpy(zero_copy_only=False) == TOKEN)
    n = len(gaps)
    first = np.flatnonzero(np.diff(records, prepend=-1))  # the first line of each record
    lengths = np.diff(np.append(first, n))
    t0 = np.repeat(gaps[first], lengths)  # each line's record's first time
    is_first = np.zeros(n, dtype=bool)
    is_first[first] = True
    steps = np.where(is_first, 0, gaps)
    group = np.repeat(np.arange(len(first)), lengths) * 2 + token  # (record, kind of clock)
    order = np.argsort(group, kind="stable")
    sums = np.cumsum(steps[order])
    starts = np.flatnonzero(np.diff(group[order], prepend=-1))
    sums -= np.repeat(sums[starts] - steps[order][starts], np.diff(np.append(starts, n)))
    running = np.empty(n, dtype=np.int64)
    running[order] = sums
    times = np.where(token, (t0 // unit + running) * unit, t0 + running)
    return np.where(is_first, gaps, times).tolist()


def _string_array(values: set[str]):
    import pyarrow as pa

    return pa.array(sorted(values), type=pa.string())
