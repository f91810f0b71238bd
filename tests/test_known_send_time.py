"""Issue #11 case 7, against a planted adapter: "in flight vs new" is decided by when the call was sent.

The adapter's one call leaves at ~0 ms and reaches the world ~300 ms later (a slow link); the stop is
pressed at 100 ms. Counted by arrival it would be new work after the stop; it was in flight.
"""

from __future__ import annotations

from tests.test_trials import run

ADAPTER = "tests.known_answer.send_time:SentBeforeStopArrivesAfter"


def test_a_call_sent_before_the_stop_that_arrives_after_it_is_in_flight(tmp_path):
    (row,) = run(ADAPTER, tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert row["effects_after_stop"] == 1
    assert (row["effects_in_flight"], row["effects_new"]) == (1, 0)
    assert row["effects_leaked"] == 1  # in flight is not undone: it still went out after the stop
