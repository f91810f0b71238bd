"""`stopbench rederive DIR`: a row is a function of its evidence and the metric code, so a fix to a metric
recomputes the rows from the kept evidence (the ledger and the marks) without running a trial again.

Per raw file: each row whose evidence record (by run_id) is kept and whose scenario is still the one it ran
(`scenario_hash`) gets every measured field (schema source `metrics`) computed again by harness/results/metrics.py
and the digest of that code (`metrics_digest`); the other fields (provenance, status, reason) are the runner's and
the trial's and stay. The file is rewritten in place, line for line (an unreadable line stays as it was). Returns
what changed: rows rederived, rows whose values moved, per field how many, and the rows that could not be.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.results import schema
from harness.results.evidence import evidence_file, read_evidence
from harness.results.metrics import compute, metrics_digest
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


def rederive(out_dir: Path, scenarios: dict[str, Scenario] | None = None) -> Rederived:
    """Every raw file of `out_dir` (results/raw/*.jsonl) derived again from `out_dir`'s evidence."""
    scenarios = load_scenarios() if scenarios is None else scenarios
    done = Rederived()
    for path in sorted((out_dir / "raw").glob("*.jsonl")):
        lines = path.read_text().splitlines(keepends=True)
        records = {r["run_id"]: r["events"] for r in read_evidence(evidence_file(out_dir, path.stem))} \
            if evidence_file(out_dir, path.stem).exists() else {}
        out = []
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                out.append(line)  # an unreadable line is the reader's to report, as it was
                continue
            if not isinstance(row, dict):
                out.append(line)
                continue
            done.rows += 1
            events = records.get(row.get("run_id"))
            scenario = scenarios.get(str(row.get("scenario")))
            if events is None:
                done.no_evidence += 1
            elif scenario is None or scenario.digest != row.get("scenario_hash"):
                done.other_scenario += 1
            else:
                row = rederive_row(row, events, scenario, done)
                line = json.dumps(row, sort_keys=True, default=str) + "\n"
            out.append(line)
        tmp = path.with_suffix(".jsonl.rederive")
        tmp.write_text("".join(out))
        os.replace(tmp, path)  # whole or not at all: an interrupted rederive leaves the file as it was
    return done

