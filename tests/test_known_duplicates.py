"""Duplicates split by cause (issue #11, case 5): a retry is not a resume repeating an effect.

An adapter without resume whose agent sends one email twice used to be counted as "repeats effect" in
the capability table, a resume column. Both planted adapters run for real.
"""

from __future__ import annotations

from harness.results.capability import capability_row
from harness.results.report import load
from tests.test_trials import run

KD = "tests.known_answer.duplicates:"


def test_a_retry_without_resume_is_a_retry_not_a_resume_duplicate(tmp_path):
    (row,) = run(KD + "RetriesEmail", tmp_path, offsets=["on:llm_request:1"])
    assert row["status"] == "ok", row["reason"]
    assert row["effects_committed_total"] == 2
    assert row["resume_error"] == "no resume"
    assert row["resume_duplicate_effects"] is None  # no resume started: not measurable, never 0
    assert row["retry_duplicate_effects"] == 1
    df, _ = load(tmp_path)
    assert capability_row(df)["repeats effect"] == "no"


def test_a_resume_that_sends_the_email_again_is_a_resume_duplicate(tmp_path):
    (row,) = run(KD + "ResumeResendsEmail", tmp_path, offsets=["on:llm_request:1"])
    assert row["status"] == "ok", row["reason"]
    assert row["effects_committed_total"] == 2
    assert row["resume_duplicate_effects"] == 1
    assert row["retry_duplicate_effects"] == 0
    assert row["resume_ok"] is False  # it never got to the final answer
    df, _ = load(tmp_path)
    assert capability_row(df)["repeats effect"] == "yes (1/1)"
