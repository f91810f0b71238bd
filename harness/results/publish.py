"""`stopbench publish`: a run's JSON Lines compacted into the published dataset, with its manifest.

A result folder with `raw/` is one run; a folder without it (results/history) is a tree of runs, each
`<...>/raw/` under it. Per adapter, the rows already published and the run's lines are read together (the
newest row of each trial wins, as every reader decides), migrated to the current row format, written as
`raw/<adapter>.parquet`, and read back: a file that does not give back what was read is an error, and nothing
is removed. The same for the evidence. `dataset.json` lists every dataset file of the folder: its row or
record count, bytes, sha256 and the stopbench commits that measured its rows, with the format's versions.

The JSON Lines stay: they are the run's working files (ignored by git where the dataset replaces them);
`--remove-working` deletes the ones whose rows and records the dataset now holds, once all are checked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.results import dataset
from harness.results.evidence import evidence_files, evidence_name, read_evidence
from harness.results.rows import adapter_raw_files, jsonl_name, raw_files, read_rows
from harness.results.schema import SCHEMA_VERSION
from harness.scenario import Scenario, load_scenarios, parse_offset

MANIFEST = "dataset.json"


class PublishError(ValueError):
    """The run cannot be published as it is (an unreadable line would be lost); the message names it."""


@dataclass
class Published:
    manifest: Path
    written: list[Path] = field(default_factory=list)
    working: list[Path] = field(default_factory=list)  # the JSON Lines the dataset now holds
    rounding: Rounding = field(default_factory=lambda: Rounding())


def runs_under(folder: Path) -> list[Path]:
    """The run folders `folder` publishes: itself when it has raw/, else every folder under it that has."""
    if (folder / "raw").is_dir():
        return [folder]
    return sorted(raw.parent for raw in folder.glob("**/raw") if raw.is_dir())


def _stems(paths: list[Path], name) -> dict[str, list[Path]]:
    grouped: dict[str, list[Path]] = {}
    for path in paths:
        grouped.setdefault(name(path), []).append(path)
    return grouped


def _replace(path: Path, write) -> None:
    """Write through a temporary file, so a reader (or a crash) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    tmp.replace(path)


def publish_rows(run: Path, to: Path) -> tuple[list[Path], list[Path]]:
    """Each adapter's rows of `run` as `to/raw/<adapter>.parquet`; (files written, JSON Lines they hold)."""
    written, working = [], []
    for name, paths in _stems(raw_files(run), jsonl_name).items():
        rows, bad = read_rows(paths)
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise PublishError(f"{bad[0]}: unreadable row line{more}; publishing would lose it: fix or remove it "
                               "first")
        target = to / "raw" / (name.removesuffix(".jsonl") + dataset.SUFFIX)
        _replace(target, lambda tmp, rows=rows: dataset.write_rows(tmp, rows))
        if dataset.read_rows(target) != rows:
            raise PublishError(f"{target}: does not read back as the rows of {', '.join(map(str, paths))}")
        written.append(target)
        working += [p for p in paths if not dataset.is_dataset_file(p)]
    return written, working


@dataclass
class Rounding:
    """How many records' token times `publish` rounded and spread (dataset.as_published), and how many it kept as
    measured:
    no row to check them against, or a measure that would have moved."""

    rounded: int = 0
    kept: int = 0


def published_events(events: list[dict[str, Any]], row: dict[str, Any] | None,
                     scenarios: dict[str, Scenario], done: Rounding) -> list[dict[str, Any]]:
    """A record's events as published: token times rounded (dataset.as_published) when its row's every measured
    field derives the same from them as from the events as measured; else as measured (a record without a row, or
    whose scenario changed since, cannot be checked and is kept as measured too)."""
    from harness.results.metrics import compute

    published = dataset.as_published(events)
    if published == events:
        return events
    scenario = scenarios.get(str((row or {}).get("scenario")))
    if row is not None and scenario is not None and scenario.digest == row.get("scenario_hash"):
        offset = parse_offset(str(row["offset"]))
        if compute(published, scenario, offset) == compute(events, scenario, offset):
            done.rounded += 1
            return published
    done.kept += 1
    return events


def publish_evidence(run: Path, to: Path, done: Rounding | None = None) -> tuple[list[Path], list[Path]]:
    """Each adapter's evidence of `run` as `to/evidence/<adapter>.parquet`, every record once (by run_id), its
    token times rounded where no measure moves (`published_events`)."""
    written, working = [], []
    done = Rounding() if done is None else done
    scenarios = load_scenarios()
    for name, paths in _stems(evidence_files(run), evidence_name).items():
        stem = name.removesuffix(".jsonl.gz")
        rows = {r.get("run_id"): r for r in read_rows(adapter_raw_files(run, stem))[0]}
        records: dict[str, dict[str, Any]] = {}
        for path in paths:
            for record in read_evidence(path):  # token times as measured (to TOKEN_TIME_NS)
                if record["run_id"] not in records:
                    records[record["run_id"]] = {**record, "events": published_events(
                        record["events"], rows.get(record["run_id"]), scenarios, done)}
        target = to / "evidence" / (stem + dataset.SUFFIX)
        kept = list(records.values())
        _replace(target, lambda tmp, kept=kept: dataset.write_evidence(tmp, kept))
        if list(dataset.read_evidence(target)) != kept:
            raise PublishError(f"{target}: does not read back as the records of {', '.join(map(str, paths))}")
        written.append(target)
        working += [p for p in paths if not dataset.is_dataset_file(p)]
    return written, working


def rewrite_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """A published rows file written again with `rows` (stopbench rederive), checked as `publish` checks it, and
    the manifest that lists it brought up to date."""
    _replace(path, lambda tmp: dataset.write_rows(tmp, rows))
    if dataset.read_rows(path) != rows:
        raise PublishError(f"{path}: does not read back as the rows written to it")
    refresh_manifest(path)


def refresh_manifest(path: Path) -> Path | None:
    """Rewrite the manifest of the nearest folder above `path` whose manifest lists it; that manifest, or None."""
    for folder in path.resolve().parents:
        listed = folder / MANIFEST
        if listed.exists():
            entries = json.loads(listed.read_text()).get("files", [])
            if any(folder / e["path"] == path.resolve() for e in entries):
                write_manifest(folder)
                return listed
    return None


def write_manifest(folder: Path) -> Path:
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest(folder), indent=1) + "\n")
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest(folder: Path) -> dict[str, Any]:
    """What `dataset.json` says of `folder`: every dataset file of its runs, with counts, size, hash, commits."""
    files = []
    for run in runs_under(folder):
        commits: dict[str, list[str]] = {}
        for path in sorted((run / "raw").glob("*" + dataset.SUFFIX)):
            rows = dataset.read_rows(path)
            commits[path.stem] = sorted({str(r.get("git_sha")) for r in rows})
            files.append({"path": path.relative_to(folder).as_posix(), "kind": "rows", "rows": len(rows),
                          "bytes": path.stat().st_size, "sha256": sha256(path), "commits": commits[path.stem]})
        for path in sorted((run / "evidence").glob("*" + dataset.SUFFIX)):
            meta = dataset.file_metadata(path, "evidence")
            files.append({"path": path.relative_to(folder).as_posix(), "kind": "evidence",
                          "records": meta["records"], "bytes": path.stat().st_size, "sha256": sha256(path),
                          "commits": commits.get(path.stem, [])})
    return {"format_version": dataset.FORMAT_VERSION, "schema_version": SCHEMA_VERSION, "files": files}


def publish(src: Path, to: Path | None = None) -> Published:
    """Every run under `src` into the dataset at `to` (default: in place), then its manifest."""
    to = src if to is None else to
    runs = runs_under(src)
    if not runs:
        raise PublishError(f"{src}: no raw/ folder of result rows (in it or under it)")
    done = Published(to / MANIFEST)
    for run in runs:
        out = to / run.relative_to(src)
        for written, working in (publish_rows(run, out), publish_evidence(run, out, done.rounding)):
            done.written += written
            done.working += working
    write_manifest(to)
    return done


def check(folder: Path) -> list[str]:
    """What is wrong with a published dataset: a manifest of a newer format, a file missing or changed."""
    path = folder / MANIFEST
    if not path.exists():
        return [f"{path}: no manifest"]
    listed = json.loads(path.read_text())
    version = listed.get("format_version")
    if not isinstance(version, int) or version > dataset.FORMAT_VERSION:
        return [f"{path}: dataset format_version {version!r}; this stopbench reads format {dataset.FORMAT_VERSION} "
                "and older (upgrade stopbench to read it)"]
    problems = []
    for entry in listed["files"]:
        file = folder / entry["path"]
        if not file.exists():
            problems.append(f"{file}: listed in {path}, missing")
        elif sha256(file) != entry["sha256"]:
            problems.append(f"{file}: sha256 differs from {path}'s")
    return problems
