"""A stop that lands in a client's retry back-off, after a scripted 429 (Retry-After 1 s), with clients of
known behaviour (tests/known_answer/provider_faults.py): the row says whether the retry went out after
the stop, what it was billed, and what came of it."""

from __future__ import annotations

from harness.scenario import scenario_from_dict
from harness.world.model_api import tokens_per_turn
from tests.known_answer.provider_faults import SCENARIO, scenarios_dir
from tests.test_trials import run

KP = "tests.known_answer.provider_faults:"
TOKENS = tokens_per_turn(scenario_from_dict(SCENARIO))  # per turn: the draft call, the email call, the summary


def trial(adapter: str, tmp_path, retry_after_s: int = 1) -> dict:
    (row,) = run(KP + adapter, tmp_path / "out", scenarios=[SCENARIO["name"]],
                 scenarios_dir=scenarios_dir(tmp_path / "scenarios", retry_after_s), offsets=["on:llm_error:1"])
    assert row["status"] == "ok", row["reason"]
    assert row["llm_errors"] == 1
    return row


def test_a_stop_in_the_back_off_that_cancels_it_sends_no_retry(tmp_path):
    row = trial("HonoursStopInBackoff", tmp_path)
    assert (row["llm_requests_after_stop"], row["tokens_after_stop"], row["effects_after_stop"]) == (0, 0, 0)


def test_a_stop_that_ignores_the_back_off_lets_the_retry_do_the_whole_job(tmp_path):
    row = trial("RetriesThroughStop", tmp_path)
    # the retry (the email call's turn, answered now) and the summary; the email it asked for
    assert (row["llm_requests_after_stop"], row["tokens_after_stop"]) == (2, TOKENS[1] + TOKENS[2])
    assert (row["effects_after_stop"], row["effects_new"], row["effects_leaked"]) == (1, 1, 1)
    assert row["effects_after_stop_by_kind"] == {"email": 1}


def test_a_retry_on_its_own_timer_goes_out_after_the_stop_and_is_billed(tmp_path):
    row = trial("RetryOutlivesStop", tmp_path)
    assert (row["llm_requests_after_stop"], row["tokens_after_stop"], row["effects_after_stop"]) == (
        1, TOKENS[1], 0)


def test_a_retry_after_a_back_off_longer_than_the_floor_is_seen(tmp_path):
    """Retry-After 4 s: the retry leaves after the 2 s floor and the settle window. The timer thread waiting for
    it is scheduled work, so the trial watches until it has gone out, whatever the back-off."""
    row = trial("RetryOutlivesStop", tmp_path, retry_after_s=4)
    assert (row["llm_requests_after_stop"], row["tokens_after_stop"], row["effects_after_stop"]) == (
        1, TOKENS[1], 0)
    assert 4000 <= row["lie_ms"] < 8000
