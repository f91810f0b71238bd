"""Evidence: each trial's ledger (the world's events and the trial's marks), kept next to its row.

A row is a reduction of a ledger; whoever doubts a cell needs the ledger behind it. The runner appends
one record per finished trial to `<out>/evidence/<adapter>.jsonl.gz`: `{"trial_id", "run_id", "events"}`,
each record its own gzip member, written and flushed at once (like the rows: an interrupted run loses
nothing it finished; a cut last member is ignored on reading, its trial still has its row). `gzip`
and `zcat` read the file as one JSON Lines stream. `stopbench timeline DIR TRIAL` prints one. The published
dataset keeps the same records as `<out>/evidence/<adapter>.parquet` (harness/results/dataset.py); every reader
here takes either kind.

Streamed tokens are most of a ledger (a long answer is 2,000 `token` events), so a run of consecutive
token events of one request is stored as one `tokens` entry: the first one's time `t`, its index `i0`,
and the nanosecond gaps to each next one (`dt`). Lossless: `read_evidence` gives back the events exactly as they
were kept, and a token's time is kept to the microsecond (dataset.TOKEN_TIME_NS: its nanoseconds are scheduling
noise); the published dataset keeps it to the millisecond where no measure can tell, and a run of tokens between
the same moments as its count, first and last time (dataset.as_published).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.results import dataset
from harness.results.rows import raw_file, raw_files, read_rows
from harness.vocabulary import Event, Mark


def evidence_file(out_dir: Path, adapter: str) -> Path:
    """`<out>/evidence/<adapter>.jsonl.gz`, named as the adapter's raw rows are."""
    return out_dir / "evidence" / (raw_file(out_dir, adapter).name + ".gz")


def adapter_evidence(out_dir: Path, adapter: str) -> list[Path]:
    """The adapter's evidence files that exist: its dataset file, then its JSON Lines (records added since)."""
    working = evidence_file(out_dir, adapter)
    published = working.with_name(working.name.removesuffix(".jsonl.gz") + dataset.SUFFIX)
    return [p for p in (published, working) if p.exists()]


def evidence_files(out_dir: Path) -> list[Path]:
    """Every evidence file of a result folder, per adapter its dataset file first."""
    folder = out_dir / "evidence"
    found = [*folder.glob("*" + dataset.SUFFIX), *folder.glob("*.jsonl.gz")]
    return sorted(found, key=lambda p: (evidence_name(p), not dataset.is_dataset_file(p)))


def evidence_name(path: Path) -> str:
    """The name of the adapter's JSON Lines evidence, whichever kind `path` is."""
    return path.name.removesuffix(dataset.SUFFIX).removesuffix(".jsonl.gz") + ".jsonl.gz"


TOKEN_KEYS = {"t", "event", "req", "i"}  # a token event as the world records it (harness/world/model_api.py)


def pack(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of consecutive token events of one request as `tokens` entries (t, req, i0, dt: gaps in ns)."""
    out: list[dict[str, Any]] = []
    run: dict[str, Any] | None = None
    last = 0
    for e in events:
        if e.get("event") == Event.TOKEN and set(e) == TOKEN_KEYS:
            if run is not None and run["req"] == e["req"] and run["i0"] + len(run["dt"]) + 1 == e["i"]:
                run["dt"].append(e["t"] - last)
            else:
                run = {"event": "tokens", "req": e["req"], "i0": e["i"], "t": e["t"], "dt": []}
                out.append(run)
            last = e["t"]
            continue
        run = None
        out.append(e)
    return out


def unpack(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`pack`'s inverse: every token event back, in order."""
    out: list[dict[str, Any]] = []
    for e in events:
        if e.get("event") != "tokens":
            out.append(e)
            continue
        t = e["t"]
        out.append({"t": t, "event": Event.TOKEN.value, "req": e["req"], "i": e["i0"]})
        for k, gap in enumerate(e["dt"], 1):
            t += gap
            out.append({"t": t, "event": Event.TOKEN.value, "req": e["req"], "i": e["i0"] + k})
    return out


def append_evidence(path: Path, trial_id: str, run_id: str, events: list[dict[str, Any]],
                    output: dict[str, str] | None = None) -> None:
    """`output`: what the trial's processes printed (file name -> its text), kept with the ledger."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"trial_id": trial_id, "run_id": run_id, "events": pack(dataset.as_kept(events))}
    if output:
        record["output"] = output
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with path.open("ab") as f:
        f.write(gzip.compress(line.encode(), compresslevel=6, mtime=0))
        f.flush()
        os.fsync(f.fileno())


def _member_lines(data: bytes) -> Iterator[str]:
    """The lines of every complete gzip member, in order; a member cut short (a killed writer) ends the reading
    quietly."""
    while data:
        member = zlib.decompressobj(wbits=31)  # one gzip member
        try:
            text = member.decompress(data)
        except zlib.error:
            return
        if not member.eof:
            return
        data = member.unused_data
        yield from (line for line in text.decode().splitlines() if line.strip())


def read_evidence(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record, in order, its events as the dataset keeps them (harness/results/dataset.py
    `as_kept`): lines an older stopbench wrote with token times in ns read as their published file does, so every
    reader (the report's timelines, timeline, repro, rederive) sees one evidence whichever kind of file holds it."""
    if dataset.is_dataset_file(path):
        yield from dataset.read_evidence(path)
        return
    for line in _member_lines(path.read_bytes()):
        record = json.loads(line)
        record["events"] = dataset.as_kept(unpack(record["events"]))
        yield record


def read_runs(path: Path, run_ids: set[str]) -> dict[str, dict[str, Any]]:
    """run_id -> record, of the records of these runs, in one pass over the file: the others are neither parsed
    nor unpacked (a whole adapter's evidence is read in seconds, a handful of its records in a fraction)."""
    if dataset.is_dataset_file(path):
        return {r["run_id"]: r for r in dataset.read_evidence(path, run_ids)} if path.exists() else {}
    found: dict[str, dict[str, Any]] = {}
    for line in _member_lines(path.read_bytes() if path.exists() else b""):
        if len(found) == len(run_ids):
            break
        if not any(run_id in line for run_id in run_ids):
            continue
        record = json.loads(line)
        if record["run_id"] in run_ids:
            record["events"] = dataset.as_kept(unpack(record["events"]))
            found[record["run_id"]] = record
    return found


def find_trial(out_dir: Path, trial: str) -> dict[str, Any] | None:
    """The record whose run_id is `trial`, or the newest of the trial whose trial_id is `trial` (a unique prefix
    of a trial_id is enough): records are appended as trials finish, so a trial rerun on other code has its
    newest last."""
    hits: dict[str, dict[str, Any]] = {}
    for path in evidence_files(out_dir):
        for record in read_evidence(path):
            if trial == record["run_id"]:
                return record
            if record["trial_id"].startswith(trial):
                hits[record["trial_id"]] = record
    if trial in hits:
        return hits[trial]
    return next(iter(hits.values())) if len(hits) == 1 else None


def merge_evidence(sources: list[Path], out: Path) -> dict[str, int]:
    """The sources' evidence into `out`, after `stopbench merge` has merged the rows: per file, the records not
    there yet (by run_id) of the rows `out` reads, the newest of each trial (every record when `out` has no rows).
    Returns how many records each file gained."""
    rows, _ = read_rows(raw_files(out)) if (out / "raw").is_dir() else ([], [])
    wanted = {r["run_id"] for r in rows} or None
    added: dict[str, int] = {}
    for src in sources:
        for path in evidence_files(src):
            target = out / "evidence" / evidence_name(path)
            done = {r["run_id"] for there in evidence_files(out) if evidence_name(there) == target.name
                    for r in read_evidence(there)}
            added.setdefault(target.name, 0)
            for record in read_evidence(path):
                if (wanted is None or record["run_id"] in wanted) and record["run_id"] not in done:
                    append_evidence(target, record["trial_id"], record["run_id"], record["events"],
                                    record.get("output"))
                    done.add(record["run_id"])
                    added[target.name] += 1
    return added


def _describe(e: dict[str, Any]) -> str:
    """One event in words: what it was, and the fields that say which."""
    if e["event"] == Event.MARK:
        data = e.get("data") or {}
        detail = ", ".join(f"{k}={v}" for k, v in data.items() if k != "processes" and v not in (None, {}, []))
        if data.get("processes"):
            detail += (", " if detail else "") + f"processes={len(data['processes'])}"
        return f"mark {e.get('name')}" + (f" ({detail[:160]})" if detail else "")
    keys = [k for k in ("kind", "effect_id", "logical", "req", "n", "what", "anchor", "pid", "role", "timeout")
            if e.get(k) not in (None, "")]
    detail = ", ".join(f"{k}={e[k]}" for k in keys)
    if e.get("sent_t"):
        detail += f", sent {(e['t'] - e['sent_t']) / 1e6:.1f} ms before"
    return e["event"] + (f" ({detail})" if detail else "")


def timeline(record: dict[str, Any]) -> str:
    """The trial's ledger as lines `+ms  event`, from run start; a run of tokens is one line, and the
    moment stop was pressed is the line every "after the stop" count starts from. Token times as published
    (dataset.as_published): the same lines from a run's evidence and from the dataset's."""
    events = sorted(dataset.as_published(record["events"]), key=lambda e: e["t"])
    start = next((e["t"] for e in events if e["event"] == Event.MARK and e.get("name") == Mark.RUN_STARTED),
                 events[0]["t"] if events else 0)
    lines = [f"trial {record['trial_id']}  run {record['run_id']}  ({len(events)} events; ms from run_started)"]
    i = 0
    while i < len(events):
        e = events[i]
        if e["event"] == Event.TOKEN:
            j = i
            while j + 1 < len(events) and events[j + 1]["event"] == Event.TOKEN:
                j += 1
            n = j - i + 1
            span = f"{(events[j]['t'] - start) / 1e6:>10.1f}" if n > 1 else ""
            lines.append(f"{(e['t'] - start) / 1e6:>10.1f}  " + (f"tokens x{n} (to {span.strip()} ms)" if n > 1
                                                                  else "token"))
            i = j + 1
            continue
        text = _describe(e)
        if e["event"] == Event.MARK and e.get("name") == Mark.STOP_CALLED:
            text = "=== STOP PRESSED === " + text
        lines.append(f"{(e['t'] - start) / 1e6:>10.1f}  {text}")
        i += 1
    return "\n".join(lines)
