"""Run your agent through one trial: the harness's own runner (a forked subject, the world, the audits)."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.contract.adapter import Adapter
from harness.results.evidence import evidence_file, read_evidence
from harness.results.metrics import TrialView
from harness.scenario import DEFAULT_SCENARIOS_DIR, Offset, load_scenarios, parse_offset
from harness.tools.mcp_launch import DEFAULT_LAUNCH
from harness.trial.runner import RunOptions, run_matrix
from stopbench.agent import AgentContext, agent_adapter
from stopbench.result import TrialResult


def event_anchors(scenario: str = "q3_report", scenarios_dir: Path | None = None) -> list[str]:
    """The scenario's event-anchored offsets (each a stop moment every run hits exactly), to parametrize over."""
    scenarios = load_scenarios(scenarios_dir) if scenarios_dir else load_scenarios()
    if scenario not in scenarios:
        raise ValueError(f"unknown scenario {scenario!r} (known: {', '.join(sorted(scenarios))})")
    return [o.text for o in scenarios[scenario].offsets if o.is_event]


def run_trial(agent: Callable[[AgentContext], Any], *, scenario: str = "q3_report",
              offset: str | Offset = "on:effect_received:email", stop: str = "event", tool_style: str = "async",
              observe_ms: float | None = None, world_url: str | None = None, out: Path | None = None,
              scenarios_dir: Path | None = None) -> TrialResult:
    """One trial of `agent` (see stopbench.agent): the stop pressed at `offset` by `stop` (`event` or `cancel`),
    observed until the run is quiet and at least `observe_ms` after the stop (`offset`: its text, parsed here
    once, or an Offset). `world_url`: a running world (the pytest plugin's); `out`: where the row and its
    evidence are written (a temporary folder if None);
    `scenarios_dir`: a folder of your own scenarios (e.g. one whose `tools:` are your agent's tools)."""
    return run_adapter_trial(agent_adapter(agent), mode=stop, scenario=scenario, offset=offset, tool_style=tool_style,
                             observe_ms=observe_ms, world_url=world_url, out=out, scenarios_dir=scenarios_dir)


def run_adapter_trial(adapter: type[Adapter], *, mode: str, scenario: str = "q3_report",
                      offset: str | Offset = "on:effect_received:email", tool_style: str = "async",
                      mcp_launch: str = DEFAULT_LAUNCH, host: str = "close", observe_ms: float | None = None,
                      world_url: str | None = None, out: Path | None = None,
                      scenarios_dir: Path | None = None) -> TrialResult:
    """One trial of a framework adapter class (harness.contract.adapter.Adapter; a reproducer defines one): stop
    button `mode` pressed at `offset`, everything else as for run_trial."""
    at = offset if isinstance(offset, Offset) else parse_offset(offset, "offset")
    with tempfile.TemporaryDirectory(prefix="stopbench-trial-") as tmp:
        folder = Path(out or tmp)
        log = io.StringIO()
        opts = RunOptions(adapter=adapter.name, modes=[mode], scenarios=[scenario], offsets=[at],
                          tool_styles=[tool_style], mcp_launches=[mcp_launch], hosts=[host], out=folder,
                          observe_ms=observe_ms, world_url=world_url,
                          scenarios_dir=Path(scenarios_dir) if scenarios_dir else DEFAULT_SCENARIOS_DIR)
        rows = run_matrix(adapter, opts, log=log)
        if len(rows) != 1:
            raise RuntimeError(f"expected one trial, got {len(rows)} row(s): {log.getvalue()[-2000:]}")
        (row,) = rows
        path = evidence_file(folder, adapter.name)
        events: list[dict[str, Any]] = next(
            (r["events"] for r in read_evidence(path) if r["trial_id"] == row["trial_id"]), [])
        return TrialResult(row, events, TrialView(events, load_scenarios(opts.scenarios_dir)[scenario], at))
