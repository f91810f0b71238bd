"""The stop button orders a send against the stop exactly (issue #11: the reference adapter's parallel
sync calls read "can abort: no" in runs where a worker thread sent a call a moment after the stop)."""

from __future__ import annotations

import pytest

from harness.stop_button import StopButton, StopPressed
from tests.test_trials import run

KA = "tests.known_answer.stop_button:"


def test_calls_that_threads_send_after_the_press_are_new_work(tmp_path):
    (row,) = run(KA + "ThreadsSendAfterThePress", tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_in_flight"], row["effects_new"]) == (2, 0, 2)


def test_calls_that_ask_the_button_are_not_sent_after_the_press(tmp_path):
    (row,) = run(KA + "ThreadsAskTheButton", tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_in_flight"], row["effects_new"]) == (0, 0, 0)
    assert row["effects_leaked"] == 0


def test_release_opens_it_again_for_the_resumed_run():
    button = StopButton()
    button.press()
    with pytest.raises(StopPressed):
        button.send_time()
    button.release()
    assert button.send_time() > 0
