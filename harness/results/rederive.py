"""`stopbench rederive DIR`: a row is a function of its evidence and the metric code, so a fix to a metric
recomputes the rows from the kept evidence (the ledger and the marks) without running a trial again.

Per raw file: each row whose evidence record (by run_id) is kept and whose scenario is still the one it ran
(`scenario_hash`) gets every measured field (schema source `metrics`) computed again by harness/results/metrics.py
and the digest of that code (`metrics_digest`); the other fields (provenance, status, reason) are the runner's and
the trial's and stay. A JSON Lines file is rewritten in place, line for line (an unreadable line stays as it was);
a published dataset file (harness/results/dataset.py) is written again whole, and the manifest that lists it with
it. Returns what changed: rows rederived, rows whose values moved, per field how many, and the rows that could not
be.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.results import dataset, schema
from harness.results.evidence import adapter_evidence, read_evidence
from harness.results.metrics import compute, metrics_digest
from harness.results.publish import rewrite_rows
from harness.results.rows import raw_files
from harness.scenario import Scenario, load_scenarios, parse_offset


@dataclass
class Rederived:
    """What `rederive` did to one result folder."""

    rows: int = 0  # rows read
    rederived: int = 0  # rows whose fields were derived again
    changed: int = 0  # of those, rows whose measured values moved
    fields: Counter[str] = field(default_factory=Counter)  # field -> rows whose value moved
    no_evidence: int = 0
    other_scenario: int = 0  # the scenario file changed since: its evidence is of another job

    def text(self) -> str:
        moved = ", ".join(f"{name} {n}" for name, n in sorted(self.fields.items(), key=lambda kv: (-kv[1], kv[0])))
        return (f"{self.rows} rows read, {self.rederived} derived again from their evidence with metrics "
                f"{metrics_digest()}; {self.changed} changed" + (f" ({moved})" if moved else "")
                + f"; left as they were: {self.no_evidence} without evidence, {self.other_scenario} of a scenario "
                "that has changed since")


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def rederive_row(row: dict[str, Any], events: list[dict[str, Any]], scenario: Scenario,
                 done: Rederived) -> dict[str, Any]:
    """The row with its measured fields computed again from `events`."""
    fresh = compute(events, scenario, parse_offset(str(row["offset"])))
    moved = [name for name in schema.MEASURED if not _same(row.get(name), fresh[name])]
    done.rederived += 1
    done.changed += bool(moved)
    done.fields.update(moved)
    return {**row, **fresh, "metrics_digest": metrics_digest()}


def _rederived(row: dict[str, Any], records: dict[str, list[dict[str, Any]]], scenarios: dict[str, Scenario],
               done: Rederived) -> dict[str, Any] | None:
    """The row derived again, or None when it cannot be (no evidence, or a scenario changed since)."""
    done.rows += 1
    events = records.get(row.get("run_id"))  # type: ignore[arg-type]
    scenario = scenarios.get(str(row.get("scenario")))
    if events is None:
        done.no_evidence += 1
    elif scenario is None or scenario.digest != row.get("scenario_hash"):
        done.other_scenario += 1
    else:
        return rederive_row(row, events, scenario, done)
    return None


def _lines_rederived(path: Path, records: dict[str, list[dict[str, Any]]], scenarios: dict[str, Scenario],
                     done: Rederived) -> None:
    out = []
    for line in path.read_text().splitlines(keepends=True):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)  # an unreadable line is the reader's to report, as it was
            continue
        if isinstance(row, dict) and (new := _rederived(row, records, scenarios, done)) is not None:
            line = json.dumps(new, sort_keys=True, default=str) + "\n"
        out.append(line)
    tmp = path.with_suffix(".jsonl.rederive")
    tmp.write_text("".join(out))
    os.replace(tmp, path)  # whole or not at all: an interrupted rederive leaves the file as it was


def rederive(out_dir: Path, scenarios: dict[str, Scenario] | None = None) -> Rederived:
    """Every rows file of `out_dir` (raw/*.jsonl, raw/*.parquet) derived again from `out_dir`'s evidence."""
    scenarios = load_scenarios() if scenarios is None else scenarios
    done = Rederived()
    for path in raw_files(out_dir):
        adapter = path.name.removesuffix(dataset.SUFFIX).removesuffix(".jsonl")
        records = {r["run_id"]: r["events"] for file in adapter_evidence(out_dir, adapter)
                   for r in read_evidence(file)}
        if dataset.is_dataset_file(path):
            rows = dataset.read_rows(path)
            rewrite_rows(path, [_rederived(row, records, scenarios, done) or row for row in rows])
        else:
            _lines_rederived(path, records, scenarios, done)
    return done
