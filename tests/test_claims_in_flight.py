"""The claim rule for "the stop button stops a tool's side effect in flight" (abortSignal handed to the tools):
read as the scorecard's "in-flight call cancelled" share (did the cancel reach the tool's request before the service
committed?), over the same trials; a claim may narrow to a tool style. Whether the effect landed is the service's."""

from __future__ import annotations

import pandas as pd

from harness.results.claims import judge, judged
from harness.results.findings import findings
from harness.results.scorecard import base_rows, trial_flags

CLAIM = {"id": "c", "framework": "fw", "claim": "abortSignal stops tool side effects in flight",
         "rule": "stops_effects_in_flight", "mode": "abort"}


def row(n: int, tool_style: str, in_flight: int | None, offset: str = "on:effect_received:email",
        status: str = "ok", mode: str = "abort", gone: int = 0) -> dict:
    return {"trial_id": f"t{n}", "adapter": "fw", "framework": "fw", "mode": mode, "mitigation": "none",
            "scenario": "q3_report", "offset": offset, "offset_kind": "event", "tool_style": tool_style, "rep": 1,
            "status": status, "reason": None if status in ("ok", "skipped") else "'stop' overran 5.0s",
            "failed_step": "stop" if status == "hung" else None, "effects_in_flight": in_flight,
            "effects_in_flight_client_gone": None if in_flight is None else gone,
            "effects_after_stop": in_flight, "effects_leaked": in_flight, "effects_new": 0, "lie_ms": 140.0,
            "llm_requests_after_stop": 0, "tokens_after_stop": 0, "threads_left": 0, "orphans": 0,
            "resume_ok": True, "resume_duplicate_effects": 0, "resume_llm_replays": 0}


def rows() -> pd.DataFrame:
    return pd.DataFrame([
        row(1, "async", 1, gone=1), row(2, "mcp", 1, gone=1), row(3, "mcp", 0),
        row(4, "async", 1, status="hung"),  # a hung stop's email counts: the client was still there
        row(5, "async", 0, offset="on:token:40"),  # no effect in flight at this anchor: not read
        row(6, "async", None, status="skipped"),  # skipped: never read
        row(7, "async", 0, mode="generate_abort"), row(8, "mcp", 0, mode="generate_abort"),
    ])


def test_the_claim_reads_whether_the_cancel_reached_the_tool_before_the_commit():
    df = rows()
    assert judge(CLAIM, df) == ("partly", "2/4 trials stopped with an effect in flight had its client gone before "
                                          "the service committed it (fw/abort 2/4); the effect landed in 3/4 (a "
                                          "service that commits what it received lands it anyway, one that honours "
                                          "a disconnect drops it)")
    assert judge({**CLAIM, "tool_style": "async"}, df)[0] == "partly"
    assert judge({**CLAIM, "tool_style": "mcp"}, df)[0] == "partly"
    assert judge({**CLAIM, "mode": "generate_abort"}, df)[0] == "refuted"
    assert judge({**CLAIM, "tool_style": "sync"}, df) == (
        "not measured", "no rows for this framework and mode abort and tool_style sync (skipped trials and those "
                        "with nothing left to stop left out)")
    assert judge(CLAIM, df[df["offset"] == "on:token:40"]) == (
        "not measured", "no trial was stopped with an effect in flight")


def test_the_claim_counts_the_trials_the_scorecards_in_flight_cell_counts():
    df = rows()
    claim = judged(CLAIM, df)
    over, counted = trial_flags(base_rows(df[df["mode"] == "abort"]))["in_flight_cancelled"]
    assert (len(claim["over"]), len(claim["counted"])) == (int(over.sum()), int(counted.sum())) == (4, 2)
    assert sorted(claim["counted"]["trial_id"]) == ["t1", "t2"]


def test_a_partly_claim_is_named_by_the_leak_finding_of_its_button():
    df = rows().assign(scenario_hash="h", mcp_launch="direct", host="close")
    [leak] = [f for f in findings(df, upstream=[], claims=[CLAIM]) if f.mode == "abort" and f.kind == "leak"]
    assert leak.claims == ("c: partly",)
