"""The published dataset: result rows and evidence as Parquet (zstd), the working JSON Lines compacted.

A run writes JSON Lines (append-only, safe to interrupt); `stopbench publish` compacts it into one Parquet
file per adapter next to them: `raw/<adapter>.parquet` (rows) and `evidence/<adapter>.parquet` (ledgers).
Every reader takes either (`read_rows`, `read_evidence` dispatch on the suffix), so a fresh clone reads the
dataset and a live run its lines.

Rows: one column per field, typed by the values it holds (a field with mixed types, or objects, as JSON
text); a field whose value is the same in every row of the file (versions, git sha, platform, python, ...)
is stored once, in the file's metadata, not in a column; `_absent` names the fields a row was written
without, so a row reads back exactly as it was. Evidence: one line per event or run of tokens: its time as a gap
to the event before it (tokens in microseconds, rounded to the millisecond where no measure can tell), the
event's name, `req` and `i`, for a run of tokens its count `n` and `span` (a run: tokens of one request between
the same moments of the ledger, which no measure and no timeline tells apart; `token_runs`, `as_published`), and
its other keys as JSON; a record's keys beyond these (what its processes printed, `output`) as JSON on its first
line. Format 1 kept each token on its own line; a reader takes both. The metadata of each file
carries `FORMAT_VERSION` and, for rows, the row format's `schema_version`; a reader refuses a newer one than it
knows (`DatasetError`) rather than misread it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.results.migrations import NewerVersion, UnknownVersion, check_version

#: the layout of a dataset file (this module); a change to it is a new version and a reader of the old one.
#: 2: a run of tokens (`token_runs`) is one line of evidence (its first time, `n` and `span`), not one per token
FORMAT_VERSION = 2
SUFFIX = ".parquet"
META_KEY = b"stopbench"
ABSENT = "_absent"  # the column naming, per row, the fields it was written without
#: zstd at its strongest: files are written once and read many times; no statistics (nothing filters by them)
WRITE_OPTIONS = {"compression": "zstd", "compression_level": 19, "write_statistics": False}
#: evidence columns and their types; any other key of an event is kept in `rest` (JSON)
EVENT_COLUMNS = ("record", "trial_id", "run_id", "dt", "event", "req", "i", "n", "span", "rest", "extra")
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


def token_runs(events: list[dict[str, Any]], between: list[int] | None = None) -> list[tuple[int, int]]:
    """The runs of tokens in `events`, as [start, end) index ranges of two tokens or more: tokens next to each
    other in the ledger, of one request with the same other keys, numbered one after the other (`i`), and in one
    slot among the ledger's moments (`moments`: no moment lies between their times, none at them), so that no
    measure can tell one token of a run from another. `between`: the ledger's moments, when already known."""
    import bisect

    between = moments(events) if between is None else between
    runs: list[tuple[int, int]] = []
    start, slot, key = 0, None, None
    for k, e in enumerate(events):
        if e.get("event") == TOKEN and type(e.get("i")) is int and type(e.get("t")) is int:
            t = e["t"]
            here = (bisect.bisect_left(between, t), bisect.bisect_right(between, t))
            same = [(name, v) for name, v in e.items() if name not in ("t", "i")]
            if key is not None and here == slot and same == key and e["i"] == events[k - 1]["i"] + 1:
                continue
        else:
            here = same = None
        if k - start > 1:
            runs.append((start, k))
        start, slot, key = k, here, same
    if len(events) - start > 1 and key is not None:
        runs.append((start, len(events)))
    return runs


def spread(first: int, last: int, n: int, unit: int) -> list[int]:
    """The times the dataset gives the `n` tokens of a run from its first and last (in `unit` ns): evenly spaced
    between them, each a whole `unit`."""
    a, span = first // unit, (last - first) // unit
    return [(a + span * k // (n - 1)) * unit for k in range(n)]


def as_published(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as the published evidence keeps them: as_kept, each token then to the millisecond where no moment
    of the ledger (`moments`) lies between its time and that millisecond (TOKEN_ROUND_NS), and the tokens inside a
    run (`token_runs`) evenly spaced between its first and last (`spread`): a measure compares a token's time only
    with moments, and a timeline shows a run of tokens as its count, first and last time. Applied twice, the
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
    for start, end in token_runs(out, between):  # rounding moved no moment: they are the other events' times
        times = spread(out[start]["t"], out[end - 1]["t"], end - start, TOKEN_TIME_NS)
        for k, t in zip(range(start, end), times, strict=True):
            if out[k]["t"] != t:
                out[k] = {**out[k], "t": t}
    return out


def _stored_runs(events: list[dict[str, Any]], unit: int) -> list[tuple[int, int]]:
    """The runs of `events` the evidence stores as one line: those whose tokens lie where `spread` puts them (so
    the file gives back every event as it was; a record kept as measured keeps each token)."""
    return [(a, b) for a, b in token_runs(events)
            if [e["t"] for e in events[a:b]] == spread(events[a]["t"], events[b - 1]["t"], b - a, unit)]


def write_evidence(path: Path, records: list[dict[str, Any]]) -> None:
    """Each record's events, one line per event or run of tokens (`_stored_runs`: its first token's line with the
    run's `n` tokens and `span`, its last time less its first in TOKEN_TIME_NS); an empty record as one line without
    an event. Times as gaps: the record's first line its time, then each token line's gap to the last token before it
    (or to the first line) in TOKEN_TIME_NS, each other event's gap to the other event before it (or to the first
    line) in ns: two regular series, each of small numbers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list[Any]] = {name: [] for name in EVENT_COLUMNS}
    for n, record in enumerate(records):
        last_ns = last_token = 0
        extra = {k: v for k, v in record.items() if k not in RECORD_KEYS}
        events = record["events"] or [{}]
        for e in events:
            if e and type(e.get("t")) is not int:
                raise DatasetError(f"{path}: trial {record['trial_id']}: an event without an integer time: {e!r:.80}")
        run_end = dict(_stored_runs(events, TOKEN_TIME_NS) if record["events"] else [])
        k = 0
        while k < len(events):
            e = events[k]
            end = run_end.get(k, k + 1)
            last = events[end - 1]
            rest = {key: v for key, v in e.items()
                    if key not in ("t", "event") and not (key in ("req", "i") and type(v) is int)}
            if not e:
                gap = None
            elif k == 0:
                gap = last_ns = kept_time(e)
                last_token = kept_time(last) // TOKEN_TIME_NS
            elif e.get("event") == TOKEN:
                gap, last_token = kept_time(e) // TOKEN_TIME_NS - last_token, kept_time(last) // TOKEN_TIME_NS
            else:
                gap, last_ns = e["t"] - last_ns, e["t"]
            cols["record"].append(n)
            cols["trial_id"].append(record["trial_id"])
            cols["run_id"].append(record["run_id"])
            cols["dt"].append(gap)
            cols["event"].append(e.get("event"))
            cols["req"].append(_int_or_none(e.get("req")))
            cols["i"].append(_int_or_none(e.get("i")))
            cols["n"].append(end - k if end - k > 1 else None)
            cols["span"].append((last["t"] - e["t"]) // TOKEN_TIME_NS if end - k > 1 else None)
            cols["rest"].append(json.dumps(rest, separators=(",", ":")) if rest else None)
            cols["extra"].append(json.dumps(extra, separators=(",", ":")) if extra and k == 0 else None)
            k = end
    types = {"record": pa.int64(), "dt": pa.int64(), "req": pa.int64(), "i": pa.int64(), "n": pa.int64(),
             "span": pa.int64()}
    table = pa.table({name: pa.array(values, type=types.get(name, pa.string())) for name, values in cols.items()})
    table = table.replace_schema_metadata(_metadata("evidence", records=len(records), token_time_ns=TOKEN_TIME_NS,
                                                    token_round_ns=TOKEN_ROUND_NS))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, use_dictionary=["trial_id", "run_id", "event", "rest"],
                   column_encoding={"record": "DELTA_BINARY_PACKED", "dt": "BYTE_STREAM_SPLIT",
                                    "req": "DELTA_BINARY_PACKED", "i": "DELTA_BINARY_PACKED",
                                    "n": "DELTA_BINARY_PACKED", "span": "DELTA_BINARY_PACKED"}, **WRITE_OPTIONS)


def read_evidence(path: Path, run_ids: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every record of an evidence file, in order (only those of `run_ids` when given: the others are skipped
    before they are decoded); a run of tokens (format 2) given back as its tokens, at the times `spread` gives
    them."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    unit = file_metadata(path, "evidence").get("token_time_ns")
    if type(unit) is not int or unit < 1:
        raise DatasetError(f"{path}: token_time_ns {unit!r} is not a positive whole number of nanoseconds")
    table = pq.read_table(path)
    if run_ids is not None:
        table = table.filter(pc.is_in(table.column("run_id"), value_set=_string_array(run_ids)))
    runs = "n" in table.column_names  # format 1 kept each token on its own line
    times = _times(table, unit)
    names = ("record", "trial_id", "run_id", "event", "req", "i", "rest", "extra",
             *(("n", "span") if runs else ()))
    cols = {name: table.column(name).to_pylist() for name in names}
    ones = [None] * table.num_rows
    record: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    for k, (n, event, req, i, rest, count, span) in enumerate(zip(
            cols["record"], cols["event"], cols["req"], cols["i"], cols["rest"], cols.get("n", ones),
            cols.get("span", ones), strict=True)):
        if record is None or n != cols["record"][k - 1]:
            if record is not None:
                yield record
            events = []
            record = {"trial_id": cols["trial_id"][k], "run_id": cols["run_id"][k], "events": events}
            if cols["extra"][k] is not None:
                record.update(json.loads(cols["extra"][k]))
        if event is None:
            continue
        more = json.loads(rest) if rest is not None else None
        for j, t in enumerate(spread(times[k], times[k] + span * unit, count, unit) if count else (times[k],)):
            e: dict[str, Any] = {"t": t, "event": event}
            if req is not None:
                e["req"] = req
            if i is not None:
                e["i"] = i + j
            if more is not None:
                e.update(more)
            events.append(e)
    if record is not None:
        yield record


def _times(table, unit: int) -> list[int]:
    """Each line's time (`write_evidence`'s gaps summed; a run's, its first token's): per record, the first line's
    time, then a running sum of the token gaps and runs' spans (in `unit` ns: the file's token_time_ns) and one of
    the other gaps (in ns), both from the first line's time."""
    import numpy as np

    gaps = table.column("dt").fill_null(0).to_numpy()
    spans = (table.column("span").fill_null(0).to_numpy() if "span" in table.column_names  # format 1: none
             else np.zeros(len(gaps), dtype=np.int64))
    records = table.column("record").to_numpy()
    token = (table.column("event").to_numpy(zero_copy_only=False) == TOKEN)
    n = len(gaps)
    first = np.flatnonzero(np.diff(records, prepend=-1))  # the first line of each record
    lengths = np.diff(np.append(first, n))
    t0 = np.repeat(gaps[first], lengths)  # each line's record's first time
    is_first = np.zeros(n, dtype=bool)
    is_first[first] = True
    steps = np.where(is_first, spans, gaps + spans)  # the token clock moves on to a run's last token
    group = np.repeat(np.arange(len(first)), lengths) * 2 + token  # (record, kind of clock)
    order = np.argsort(group, kind="stable")
    sums = np.cumsum(steps[order])
    starts = np.flatnonzero(np.diff(group[order], prepend=-1))
    sums -= np.repeat(sums[starts] - steps[order][starts], np.diff(np.append(starts, n)))
    running = np.empty(n, dtype=np.int64)
    running[order] = sums
    times = np.where(token, (t0 // unit + running - spans) * unit, t0 + running)
    return np.where(is_first, gaps, times).tolist()


def _string_array(values: set[str]):
    import pyarrow as pa

    return pa.array(sorted(values), type=pa.string())
