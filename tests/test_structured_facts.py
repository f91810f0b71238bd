"""Facts a row carries as fields of their own, never inside text to parse back: the step a trial went wrong in
(`failed_step`), how its MCP server was launched (`mcp_launch`), and the offset, which travels as data."""

from __future__ import annotations

import json

import pytest

from harness.results.agreement import agreement
from harness.results.cells import frame
from harness.results.rows import raw_file, read_rows
from harness.results.selection import in_main_matrix, tools_shown
from harness.scenario import Offset, parse_offset
from harness.trial.spec import RunInfo, SubjectPlan, TrialSpec
from tests.test_trials import KA, run


@pytest.mark.parametrize("adapter,status,step", [
    ("LeaksOneEmail", "ok", None),
    ("FailsToStart", "failed", "start"),
    ("HangsInStop", "hung", "stop"),  # the watchdog ends it: stop() blocks the loop
    ("StopLeavesJobRunning", "hung", "wait"),
])
def test_the_trial_writes_the_step_it_went_wrong_in(tmp_path, adapter, status, step):
    (row,) = run(KA + adapter, tmp_path, offsets=["at:50ms"])
    assert (row["status"], row["failed_step"]) == (status, step), row["reason"]
    (stored,) = [json.loads(line) for line in raw_file(tmp_path, row["adapter"]).read_text().splitlines()]
    assert stored["failed_step"] == step  # written by the trial, not derived when read


def _legacy(**kw) -> dict:
    """A row as stopbench wrote them before `failed_step` and `mcp_launch` were fields."""
    return {"schema_version": 1, "trial_id": kw.pop("trial_id"), "adapter": "fw", "mode": "cancel",
            "scenario": "q3_report", "offset": "on:effect_received:email", "offset_kind": "event",
            "mitigation": "none", "rep": 0, "reason": None, **kw}


def test_rows_written_before_the_fields_existed_are_read_with_them(tmp_path):
    path = tmp_path / "raw" / "fw.jsonl"
    path.parent.mkdir()
    old = [_legacy(trial_id="a", status="hung", tool_style="mcp+launcher", reason="'stop' overran 5.0s"),
           _legacy(trial_id="b", status="failed", tool_style="mcp", reason="stop: AttributeError: x (at y.py:4)"),
           _legacy(trial_id="c", status="hung", tool_style="async", reason="watchdog ended the subject during 'close'"),
           _legacy(trial_id="d", status="runaway", tool_style="sync", reason="'settle_resume': the run was not quiet"),
           _legacy(trial_id="e", status="failed", tool_style="mcp+deaf", reason="subject crashed: MemoryError"),
           _legacy(trial_id="f", status="ok", tool_style="mcp+stubborn"),
           _legacy(trial_id="g", status="skipped", tool_style="mcp", reason="break_sync with mcp tools: async-only")]
    new = _legacy(trial_id="h", status="failed", tool_style="mcp", mcp_launch="deaf", failed_step=None,
                  reason="stop: a reason the row's own field overrules")
    path.write_text("".join(json.dumps(r) + "\n" for r in [*old, new]))
    rows, bad = read_rows([path])
    assert not bad
    got = {r["trial_id"]: (r["tool_style"], r["mcp_launch"], r["failed_step"]) for r in rows}
    assert got == {"a": ("mcp", "launcher", "stop"), "b": ("mcp", "direct", "stop"), "c": ("async", "direct", "close"),
                   "d": ("sync", "direct", "settle_resume"), "e": ("mcp", "deaf", None),
                   "f": ("mcp", "stubborn", None), "g": ("mcp", "direct", None), "h": ("mcp", "deaf", None)}
    df = frame(rows)  # the report's DataFrame: the two columns, read from the fields
    assert list(tools_shown(df)) == ["mcp+launcher", "mcp", "async", "sync", "mcp+deaf", "mcp+stubborn", "mcp",
                                     "mcp+deaf"]
    assert list(df.loc[in_main_matrix(df), "trial_id"]) == ["b", "c", "d", "g"]


def test_agree_tells_an_mcp_launch_variant_from_the_direct_launch():
    """Two cells that differ only in how the MCP server was launched are two cells, named as trial ids name them."""
    base = {"adapter": "fw", "mode": "cancel", "scenario": "q3_report", "scenario_hash": "h", "offset": "on:token:5",
            "offset_kind": "event", "tool_style": "mcp", "mitigation": "none", "host": "close", "status": "ok",
            "tokens_after_stop": 0}
    rows = [{**base, "mcp_launch": launch, "rep": rep, "tokens_after_stop": rep if launch == "deaf" else 0}
            for launch in ("direct", "deaf") for rep in (0, 1)]
    (fw,) = agreement(rows)
    assert (fw["cells"], fw["agree"]) == (2, 1)
    assert fw["where"] == ["cancel q3_report on:token:5 mcp+deaf none"]  # the deaf launch's repetitions disagree


def test_the_offset_travels_to_a_spawned_subject_as_data(tmp_path):
    spec = TrialSpec("a", "cancel", "q3_report", parse_offset("on:effect_received:email"), "mcp", mcp_launch="deaf")
    plan = SubjectPlan(spec, RunInfo("http://w", "r1", "http://m", "http://s", tmp_path), settle_window_ms=200)
    sent = json.loads(plan.to_json())["spec"]["offset"]
    assert sent == {"text": "on:effect_received:email", "at_ms": None, "event": "effect_received",
                    "effect": "email", "n": 1}
    assert SubjectPlan.from_json(plan.to_json()).spec == spec
    assert Offset.from_data(sent).kind == "event"
