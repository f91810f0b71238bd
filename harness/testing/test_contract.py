"""The shared contract: every adapter starts, stops in every declared mode with every tool style,
closes cleanly, declares its versions, talks to nothing but the world, and resumes or says it cannot.

These check the adapter's plumbing, never its results: what the framework does after the stop is
measured by `stopbench run`, not asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract.adapter import TOOL_STYLES, Adapter
from harness.contract.registry import load_adapter
from harness.scenario import parse_offset
from harness.trial.reap import processes_of_runs
from harness.trial.runner import RunOptions, run_matrix


@pytest.fixture(scope="module")
def contract_rows(contract_adapter, tmp_path_factory, pytestconfig) -> dict[tuple[str, str], dict]:
    cls = load_adapter(contract_adapter)
    out: Path = tmp_path_factory.mktemp("contract")
    scenario = pytestconfig.getoption("--contract-scenario")
    offset = parse_offset(pytestconfig.getoption("--contract-offset"), "--contract-offset")
    # side by side (jobs auto: harness/trial/concurrency.py), as a bench runs them: nothing here is a count that
    # load could move, and a time offset given with --contract-offset still fires on a run no other trial slows
    rows = run_matrix(cls, RunOptions(adapter=contract_adapter, scenarios=[scenario], offsets=[offset], out=out,
                                      jobs=None))
    return {(r["mode"], r["tool_style"]): r for r in rows}


def test_declares_itself(contract_adapter):
    cls: type[Adapter] = load_adapter(contract_adapter)
    assert isinstance(cls.name, str) and cls.name
    assert cls.stop_modes and all(isinstance(v, str) and v.strip() for v in cls.stop_modes.values()), \
        "every stop mode needs a one-line description of the primitive it presses"
    assert set(cls.tool_styles) <= set(TOOL_STYLES) and cls.tool_styles
    for (mode, style), why in cls.unsupported.items():
        assert mode in cls.stop_modes and style in cls.tool_styles, \
            f"unsupported names ({mode!r}, {style!r}), which is not a declared stop mode and tool style"
        assert isinstance(why, str) and why.strip(), \
            f"unsupported ({mode!r}, {style!r}) needs its reason: the trial is skipped with it"
    versions = cls.versions()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items())
    missing = [k for k, v in versions.items() if v == "not installed"]
    assert not missing, f"declared packages not installed: {missing}"


def test_stops_and_closes_in_every_mode(contract_adapter, mode_and_style, contract_rows):
    mode, style = mode_and_style
    row = contract_rows[(mode, style)]
    if (mode, style) in load_adapter(contract_adapter).unsupported:
        assert row["status"] == "skipped", \
            f"{mode}/{style}: declared unsupported, but its trial ran ({row['status']}): it must be a skipped row"
        return
    if row["status"] == "skipped":  # a primitive later than the installed release (modes_since)
        assert "unsupported in" in str(row["reason"]), f"{mode}/{style}: skipped: {row['reason']}"
        return
    assert row["status"] != "failed", f"{mode}/{style}: {row['reason']}"
    assert row["stop_return_ms"] is not None, f"{mode}/{style}: stop() never returned ({row['reason']})"
    assert row["close_ok"] is True, f"{mode}/{style}: close() raised or overran ({row['reason']})"
    assert row["egress_attempts"] == 0, f"{mode}/{style}: tried to reach beyond 127.0.0.1"
    assert row["tokens_total"] > 0, "the adapter must talk to the world's model"


def test_resume_works_or_is_declared_absent(contract_adapter, contract_rows):
    """Each mode on its own: a declared resume runs after every stop that left the trial ok (whether it then
    reaches the final answer after that stop is measured, not asserted: at least one mode must)."""
    cls = load_adapter(contract_adapter)
    rows = [r for r in contract_rows.values() if r["status"] != "skipped"]
    if not cls.has_resume() or not rows:
        assert all(r["resume_ok"] is None for r in rows)
        return
    absent = [f"{r['mode']}/{r['tool_style']}: {r['resume_error'] or 'resume never ran'}" for r in rows
              if r["status"] == "ok" and r["resume_ok"] is None]
    assert not absent, "resume is declared, but after these stops it did not run: " + "; ".join(absent)
    assert any(r["resume_ok"] for r in rows), \
        "resume is declared but no mode resumed to the final answer: " + \
        "; ".join(f"{r['mode']}/{r['tool_style']}: {r['resume_error']}" for r in rows)


def test_leaves_nothing_running(contract_rows):
    left = processes_of_runs({r["run_id"] for r in contract_rows.values()})
    assert not left, f"processes of the contract trials still running: {left}"
