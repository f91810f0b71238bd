"""Issue #11 case 7, against a planted adapter: "in flight vs new" is decided by when the call was sent.

The adapter's one call leaves at ~0 ms and reaches the world ~300 ms later (a slow link); the stop is
pressed at 100 ms. Counted by arrival it would be new work after the stop; it was in flight.
"""

from __future__ import annotations

from pathlib import Path

from harness.contract.registry import load_adapter
from harness.trial.runner import RunOptions, run_matrix
from harness.trial.spec import Deadlines
from tests.test_trials import assert_nothing_left

ADAPTER = "tests.known_answer.send_time:SentBeforeStopArrivesAfter"
FAST = Deadlines(start=5, trigger=5, stop=1.5, wait=2, settle=5, resume=5, close=2, grace=1)


def run(adapter: str, tmp_path: Path, **kw) -> list[dict]:
    kw.setdefault("scenarios", ["q3_report"])
    kw.setdefault("deadlines", FAST)
    opts = RunOptions(adapter=adapter, out=tmp_path, **kw)
    rows = run_matrix(load_adapter(adapter), opts)
    assert_nothing_left([r["run_id"] for r in rows])
    return rows


def test_a_call_sent_before_the_stop_that_arrives_after_it_is_in_flight(tmp_path):
    (row,) = run(ADAPTER, tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert row["effects_after_stop"] == 1
    assert (row["effects_in_flight"], row["effects_new"]) == (1, 0)
    assert row["effects_leaked"] == 1  # in flight is not undone: it still went out after the stop
