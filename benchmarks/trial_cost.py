"""What a trial costs, per framework and tool style: wall and CPU per trial, and wall against the floor.

`python benchmarks/trial_cost.py [RESULTS_DIR ...]` (default: results) reads the rows of a run and prints,
for each framework x tool style, the median wall time of a trial (`duration_s`), the median CPU time of
its subject and the processes it waited for (`subject_cpu_s`, MCP servers included), and the median ratio
of wall time to the trial's floor: the scenario's scripted time (each turn's first-token wait, its token
pacing, and the latency of its tool calls, parallel calls counted once) plus two settle windows (after the
stop and after the resume), i.e. what a trial would take if the harness and the framework cost nothing.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from harness.results.rows import raw_files, read_rows
from harness.scenario import Scenario, load_scenarios
from harness.tools.catalogue import TOOL_SPECS
from harness.trial.trial import settle_window_ms
from harness.world.model_api import tokens_per_turn


def scripted_ms(scenario: Scenario) -> float:
    """The scenario's own time: what the world makes any agent wait, start to end."""
    total = 0.0
    for turn, tokens in zip(scenario.turns, tokens_per_turn(scenario), strict=True):
        total += scenario.ttft_ms + (1000 * tokens / scenario.tokens_per_s if scenario.tokens_per_s else 0)
        kinds = [TOOL_SPECS[c.name][0].split("/")[0] for c in turn.tool_calls]  # the service: docs, email, ...
        total += max((scenario.latency_ms[k] for k in kinds), default=0)
    return total


def table(rows: list[dict], scenarios: dict[str, Scenario]) -> str:
    floor = {name: (scripted_ms(s) + 2 * settle_window_ms(s)) / 1000 for name, s in scenarios.items()}
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("status") in ("ok", "hung", "failed") and r.get("scenario") in floor:
            cells[(r["framework"], r["tool_style"])].append(r)
    lines = ["| framework | tools | trials | wall s p50 | CPU s p50 | wall / floor p50 | CPU s total |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (fw, style), rs in sorted(cells.items()):
        wall = [r["duration_s"] for r in rs]
        cpu = [r["subject_cpu_s"] for r in rs if r.get("subject_cpu_s") is not None]
        ratio = [r["duration_s"] / floor[r["scenario"]] for r in rs]
        lines.append(f"| {fw} | {style} | {len(rs)} | {statistics.median(wall):.2f} | "
                     f"{statistics.median(cpu) if cpu else float('nan'):.2f} | {statistics.median(ratio):.2f} | "
                     f"{sum(cpu):.0f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    scenarios = load_scenarios()
    for folder in map(Path, argv or ["results"]):
        rows, bad = read_rows(raw_files(folder))
        print(f"## {folder}: {len(rows)} rows" + (f" ({len(bad)} unreadable lines skipped)" if bad else ""))
        print(table(rows, scenarios))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
