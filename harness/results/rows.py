"""Raw result rows: JSON Lines, append-only, flushed per row, one file per adapter under <out>/raw/.

An interrupted run loses nothing it finished, and a rerun skips every trial that already has a row.
A corrupt line (not JSON, a required field missing, a value of the wrong type for its field as
harness/results/schema.py declares it) is reported with its file, line and field and skipped; it never
stops a report. A row of an older format version is migrated (harness/results/migrations.py), one of a newer
version is reported as unreadable with its version. A field a row was written without gets its declared
default (e.g. `framework`). The published dataset (`<out>/raw/<adapter>.parquet`, harness/results/dataset.py)
is read by the same functions: `raw_files` lists both kinds, `read_rows` reads either.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness.results import dataset, schema
from harness.results.migrations import NewerVersion, UnknownVersion, check_version, migrate
from harness.results.schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def git_sha() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
        sha = out.stdout.strip()
        if sha:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def environment() -> dict[str, Any]:
    """Where the row was measured: recorded in every row."""
    from harness.results.metrics import metrics_digest  # the metrics read the scenario: imported when a run needs it
    return {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "git_sha": git_sha(),
        "stopbench_version": harness.__version__,
        "metrics_digest": metrics_digest(),
    }


def raw_file(out_dir: Path, adapter: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in adapter)
    return out_dir / "raw" / f"{safe}.jsonl"


def append_row(path: Path, row: dict[str, Any]) -> None:
    """One row, one line. A file whose last line was cut short (a killed writer, a full disk) gets a line
    break first, so the new row stands on its own line and the cut one stays a reported unreadable line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(row, sort_keys=True, default=str) + "\n"
    with path.open("a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write(line.encode())
        f.flush()
        os.fsync(f.fileno())


@dataclass
class CorruptLine:
    path: Path
    line: int
    error: str
    schema_version: Any = None  # set when the line is a row of another result schema

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.error}"


def read_rows(paths: list[Path]) -> tuple[list[dict[str, Any]], list[CorruptLine]]:
    """The readable rows, the newest of each trial only (newest_per_trial), and the unreadable lines. A dataset
    file (`.parquet`) is read whole or not at all: one of a format this stopbench does not know raises
    `dataset.DatasetError`, naming it."""
    rows: list[dict[str, Any]] = []
    bad: list[CorruptLine] = []
    for path in paths:
        if dataset.is_dataset_file(path):
            rows += [schema.with_defaults(row) for row in dataset.read_rows(path)]
            continue
        for lineno, row, error in _lines(path):
            if error:
                other = row["schema_version"] if row else None
                bad.append(CorruptLine(path, lineno, error, other))
            else:
                rows.append(row)
    return newest_per_trial(rows), bad


def newest_per_trial(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per trial_id, in the order read: the one finished last (a trial rerun because its row was
    measured on other code has both in its file), the later line of two finished in the same second."""
    newest: dict[str, int] = {}
    for i, row in enumerate(rows):
        seen = newest.get(row["trial_id"])
        if seen is None or str(row.get("finished_at", "")) >= str(rows[seen].get("finished_at", "")):
            newest[row["trial_id"]] = i
    keep = set(newest.values())
    return [row for i, row in enumerate(rows) if i in keep]


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    with path.open() as f:
        for lineno, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except ValueError as e:
                yield lineno, None, f"not valid JSON ({e})"
                continue
            if not isinstance(row, dict):
                yield lineno, None, "not a JSON object"
                continue
            missing = [k for k in schema.REQUIRED if k not in row]
            if missing:
                yield lineno, None, f"missing field(s) {', '.join(missing)}"
                continue
            try:
                check_version(row["schema_version"], "row")
            except (NewerVersion, UnknownVersion):  # the row goes with it: its version is named
                yield lineno, row, (f"schema_version {row['schema_version']!r}, this stopbench reads versions up "
                                    f"to {SCHEMA_VERSION}")
                continue
            if problems := schema.problems(row):
                yield lineno, None, "; ".join(problems)
            else:
                yield lineno, schema.with_defaults(migrate(row)), None


def adapter_raw_files(out_dir: Path, adapter: str) -> list[Path]:
    """The adapter's rows files that exist: its dataset file, then its JSON Lines."""
    working = raw_file(out_dir, adapter)
    return [p for p in (working.with_suffix(dataset.SUFFIX), working) if p.exists()]


def raw_files(out_dir: Path) -> list[Path]:
    """The rows files of a result folder, per adapter its published dataset file first, then its JSON Lines (rows
    a run added since: read later, they win a trial's tie)."""
    found = [*(out_dir / "raw").glob("*" + dataset.SUFFIX), *(out_dir / "raw").glob("*.jsonl")]
    return sorted(found, key=lambda p: (jsonl_name(p), not dataset.is_dataset_file(p)))


def jsonl_name(path: Path) -> str:
    """The name of the adapter's JSON Lines file, whichever kind `path` is (one order for both kinds)."""
    return path.name.removesuffix(dataset.SUFFIX).removesuffix(".jsonl") + ".jsonl"


def finished_trials(paths: list[Path]) -> dict[str, str]:
    """trial_id -> when its newest row in these files (those that exist) was finished."""
    rows, _ = read_rows([p for p in paths if p.exists()])
    return {r["trial_id"]: str(r.get("finished_at", "")) for r in rows}


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class MergeError(ValueError):
    """A merge source that is not a result folder; the message names it."""


def merge(sources: list[Path], out: Path) -> dict[str, dict[str, int]]:
    """Merge the raw rows of result folders (e.g. the shards of one run) into `out`'s JSON Lines: per adapter,
    every row whose trial is not there yet (in `out`'s lines or its dataset) or is there only in an older row
    (readers keep the newest), in the order the sources are given. Returns, per file, how many rows were added,
    how many were already there (as new or newer), and how many lines were unreadable."""
    for src in sources:
        if not (src / "raw").is_dir():
            raise MergeError(f"{src}: no raw/ folder of result rows")
    summary: dict[str, dict[str, int]] = {}
    for src in sources:
        for path in raw_files(src):
            target = out / "raw" / jsonl_name(path)  # rows are added to the lines, whichever kind the source is
            done = finished_trials([target.with_suffix(dataset.SUFFIX), target])
            rows, bad = read_rows([path])
            counts = summary.setdefault(target.name, {"added": 0, "already there": 0, "unreadable": 0})
            counts["unreadable"] += len(bad)
            for row in rows:
                finished = str(row.get("finished_at", ""))
                if row["trial_id"] in done and done[row["trial_id"]] >= finished:
                    counts["already there"] += 1
                    continue
                append_row(target, row)
                done[row["trial_id"]] = finished
                counts["added"] += 1
    return summary


class OutputError(RuntimeError):
    """The raw file cannot be written: another live run writes it, or the folder is not writable."""


class RawFileLock:
    """Held by the run writing `<out>/raw/<adapter>.jsonl`: a second run on the same folder would plan the
    same trials and write every row twice. An advisory lock (flock), released by the kernel if the
    holder dies, so a killed run never blocks the next one."""

    def __init__(self, raw: Path):
        self.path = raw.with_name(raw.name + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> RawFileLock:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            with self.path.with_suffix("").open("a"):  # the raw file itself must take rows
                pass
        except OSError as e:
            raise OutputError(f"{self.path.parent}: cannot write result rows here ({e.strerror or e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise OutputError(f"{self.path.with_suffix('')}: another stopbench run (pid {holder}) is writing it; "
                             "wait for it to finish, or give this run another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock; the file stays (removing it would race a waiting run)
            self.fd = None
