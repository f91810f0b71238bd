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


def test_an_mcp_call_the_server_sends_after_the_press_is_new_work(tmp_path):
    (row,) = run(KA + "McpCallSentAfterThePress", tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_in_flight"], row["effects_new"]) == (1, 0, 1)


def test_an_mcp_server_that_asks_the_button_does_not_send_after_the_press(tmp_path):
    (row,) = run(KA + "McpCallAsksTheButton", tmp_path, offsets=["at:100ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_in_flight"], row["effects_new"]) == (0, 0, 0)
    assert (row["orphans"], row["effects_leaked"]) == (0, 0)


def test_another_process_sees_the_press_and_the_release(tmp_path):
    """The button in a file: a process that opens the same path is told of the press (StopPressed), and
    sends again after the release."""
    import subprocess
    import sys

    path = tmp_path / "stop-button"
    ask = [sys.executable, "-c", "import sys; from pathlib import Path; from harness.stop_button import "
           "StopButton, StopPressed\ntry:\n    StopButton.of_file(Path(sys.argv[1])).send_time()\nexcept StopPressed:\n"
           "    sys.exit(3)", str(path)]
    button = StopButton(path)
    button.press()
    button.release()
    assert not path.exists()  # shared with nobody: the press never touches a file
    assert button.share() == path
    assert subprocess.run(ask).returncode == 0
    button.press()
    assert subprocess.run(ask).returncode == 3
    button.release()
    assert subprocess.run(ask).returncode == 0


def test_release_opens_it_again_for_the_resumed_run():
    button = StopButton()
    button.press()
    with pytest.raises(StopPressed):
        button.send_time()
    button.release()
    assert button.send_time() > 0
