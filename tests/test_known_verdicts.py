"""Verdicts over all rows (issue #11, case 8): a stop button that hangs or fails at an anchor did not abort there.

The capability table and the claims used to read only `ok` rows, so a mode that hung at every effect anchor
"aborted at every event anchor" over the rows that survived. A planted adapter runs for real; hand-written
rows cover the other statuses and steps.
"""

from __future__ import annotations

import pandas as pd

from harness.results.capability import capability_row
from harness.results.claims import judge
from harness.results.migrations import facts_out_of_text
from harness.results.report import load
from tests.test_trials import run

KV = "tests.known_answer.verdicts:AbortsOrHangs"
FRAMEWORK = "known-aborts-or-hangs"  # the adapter's name: it declares no framework
NO_ABORT = {"id": "x", "framework": FRAMEWORK, "claim": "no abort primitive, state dropped",
            "rule": "no_abort_and_no_resume"}


def test_a_button_that_hangs_at_an_effect_anchor_did_not_abort_there(tmp_path):
    rows = run(KV, tmp_path, offsets=["on:llm_request:1", "on:effect_received:email"])
    assert {(r["mode"], r["offset"]): (r["status"], r["reason"]) for r in rows} == {
        ("cancel", "on:llm_request:1"): ("ok", None),
        ("cancel", "on:effect_received:email"): ("ok", None),
        ("token", "on:llm_request:1"): ("ok", None),
        ("token", "on:effect_received:email"): ("hung", "'stop' overran 1.5s"),
    }
    df, bad = load(tmp_path)  # the report's own reader
    assert not bad and len(df) == 4
    by_mode = {mode: capability_row(g) for mode, g in df.groupby("mode")}
    assert by_mode["cancel"] == {
        "can abort": "yes", "state kept": "no", "can resume": "yes", "repeats effect": "yes (1/2)",
        "compensated": "no", "orphans clean": "yes"}
    assert by_mode["token"] == {
        "can abort": "no (1/2: 1 hung in stop); hangs (1/2)",  # was "hangs (1/2)"
        "state kept": "no", "can resume": "yes", "repeats effect": "no",
        "compensated": "no",  # the email in flight at the hung stop was never undone; was "-"
        "orphans clean": "yes"}
    hung = f"{FRAMEWORK}/token 1/2 (1 hung in stop ('stop' overran 1.5s))"
    kept = "resume kept the state (reached the end without asking a completed turn again) in 0/3 trials"
    verdict, why = judge(NO_ABORT, df)  # cancel aborts; no resume kept the state (each asked a turn again)
    assert (verdict, why.split("; ")[:2]) == ("partly", [
        f"buttons that aborted at every judged trial: {FRAMEWORK}/cancel",
        f"judged trials that hung or failed (did not abort): {hung}"]) and kept in why
    verdict, why = judge({**NO_ABORT, "mode": "token"}, df)
    assert verdict == "confirmed" and why.startswith("buttons that aborted at every judged trial: none; ")


# --- hand-written rows: every status, every step ----------------------------------------------------------------

def step_of(reason: str | None) -> str | None:
    """The step a hand-written reason names, as read_rows reads it from a row written before `failed_step`."""
    return facts_out_of_text({"reason": reason})["failed_step"]


def row(mode: str = "token", offset: str = "on:effect_received:email", status: str = "ok",
        reason: str | None = None, **measured) -> dict:
    return {"adapter": "fw", "framework": "fw", "mode": mode, "mitigation": "none", "scenario": "q3_report",
            "offset": offset, "offset_kind": "time" if offset.startswith("at:") else "event", "tool_style": "async",
            "status": status, "reason": reason, "failed_step": step_of(reason), "llm_requests_after_stop": 0,
            "effects_new": 0,
            "tokens_after_stop": 0, "threads_left": 0, "effects_after_stop": 0, "effects_leaked": 0, "orphans": 0,
            "resume_ok": True, "resume_error": None, "resume_llm_replays": 0, "resume_duplicate_effects": 0,
            **measured}


FAILED = "stop: AttributeError: 'coroutine' object has no attribute 'cancel' (at _cancellation_token.py:42)"
RUNAWAY = "'{step}': the run was not quiet 5s after the observation floor"  # as metrics.status says it
NOT_MEASURED = {"resume_ok": None, "resume_llm_replays": None, "resume_duplicate_effects": None}


def test_hung_failed_and_runaway_trials_did_not_abort_and_are_named():
    rows = [row(), row(offset="on:llm_request:1"),
            row(status="hung", reason="'stop' overran 5.0s", **NOT_MEASURED),
            row(status="hung", reason="watchdog ended the subject during 'stop'", **NOT_MEASURED),
            row(status="failed", reason=FAILED, resume_llm_replays=2),  # stop raised; resume ran after it
            row(status="runaway", reason=RUNAWAY.format(step="settle")),
            row(status="skipped", reason="the job ended before the stop offset", llm_requests_after_stop=3),
            row(offset="at:150ms", status="hung", reason="'wait' overran 5.0s: the job did not end", **NOT_MEASURED)]
    df = pd.DataFrame(rows)
    cap = capability_row(df)
    assert cap["can abort"] == "no (4/6: 2 hung in stop, 1 failed in stop, 1 runaway in settle); hangs (3/7)"
    assert cap["state kept"] == "partly (3/4)" and cap["can resume"] == "yes"  # the failed stop's resume replayed
    claim = {"id": "x", "framework": "fw", "claim": "c", "rule": "no_abort_and_no_resume"}
    verdict, why = judge(claim, df)
    assert verdict == "partly"
    assert why == ("buttons that aborted at every judged trial: none; judged trials that hung or failed (did not "
                   "abort): fw/token 4/6 (2 hung in stop ('stop' overran 5.0s), 1 failed in stop (AttributeError: "
                   "'coroutine' object has no attribute 'cancel'), 1 runaway in settle (the run was not quiet 5s after "
                   "the observation floor)); resume kept the state (reached the end without asking a completed turn "
                   "again) in 3/4 trials (fw/token 3/4)")
    running = judge({**claim, "rule": "keeps_running"}, df)
    assert running[0] == "partly" and running[1].startswith("5/7 trials kept generating tokens")
    assert "counted among them, as not stopped: 2 hung in stop" in running[1]


def test_a_trial_that_went_wrong_after_the_stop_phase_is_read_by_what_it_measured():
    """A clean abort whose resume hung: the button aborted; the resume did not work."""
    rows = [row(), row(offset="on:llm_request:1", status="hung", reason="'resume' overran 5.0s", **NOT_MEASURED),
            row(offset="on:token:40", status="hung", reason="'close' overran 2.0s", resume_llm_replays=1)]
    df = pd.DataFrame(rows)
    cap = capability_row(df)
    assert cap["can abort"] == "hangs (2/3)"  # every event trial aborted; two trials hung later
    assert cap["can resume"] == "partly (2/3: 1 hung in resume)"
    assert cap["state kept"] == "partly (1/3: 1 hung in resume)"
    claim = {"id": "x", "framework": "fw", "claim": "c", "rule": "resumes_cleanly"}
    assert judge(claim, df) == ("partly", "resume reached the end without a repeated effect in: fw/token 2/3; "
                                          "not resumed: 1 hung in resume ('resume' overran 5.0s)")
    assert judge({**claim, "rule": "no_abort_and_no_resume"}, df)[0] == "refuted"  # it aborts, and resumes


def test_no_resume_and_not_measured_are_told_apart():
    no_resume = pd.DataFrame([row(resume_error="no resume", **NOT_MEASURED)])
    assert capability_row(no_resume)["can resume"] == "no resume"
    never = pd.DataFrame([row(status="hung", reason="'stop' overran 5.0s", **NOT_MEASURED)])
    cap = capability_row(never)
    assert (cap["can abort"], cap["state kept"], cap["can resume"]) == ("no (1/1: 1 hung in stop); hangs (1/1)",
                                                                          "-", "-")
    skipped = pd.DataFrame([row(status="skipped", reason="x")])
    assert judge({"framework": "fw", "rule": "keeps_running"}, skipped) == (
        "not measured", "no rows for this framework (skipped trials and those with nothing left to stop left out)")


def test_a_saga_trial_that_hung_before_its_saga_ran_did_not_close_the_leak():
    leak = {"effects_after_stop": 1, "effects_leaked": 1}
    rows = [row(**leak), row(mitigation="saga", effects_after_stop=1, effects_compensated=1),
            row(offset="on:llm_request:2", **leak),
            row(offset="on:llm_request:2", mitigation="saga", status="hung", reason="'stop' overran 5.0s", **leak)]
    verdict, why = judge({"framework": "*", "rule": "saga_closes_leak"}, pd.DataFrame(rows))
    assert verdict == "partly"
    assert why.startswith("1/2 leaking cells had 0 leaked with saga; still leaking: fw/token/q3_report/"
                          "on:llm_request:2/async")
    assert why.endswith("saga trials that went wrong before the saga ran: 1 hung in stop ('stop' overran 5.0s)")


def test_a_runaway_after_resume_is_read_by_what_it_measured_but_one_after_the_stop_did_not_abort():
    from harness.results.metrics import status

    after_resume = status([{"t": 1, "event": "mark", "name": "settle_resume", "data": {"quiet": False,
                                                                                       "deadline_s": 5}},
                           {"t": 0, "event": "mark", "name": "stop_returned", "data": None}], 0, None, None)
    assert after_resume == ("runaway", RUNAWAY.format(step="settle_resume"), "settle_resume")
    df = pd.DataFrame([row(), row(status="runaway", reason=after_resume[1])])
    assert capability_row(df)["can abort"] == "yes"
    df = pd.DataFrame([row(), row(status="runaway", reason=RUNAWAY.format(step="settle"))])
    assert capability_row(df)["can abort"] == "no (1/2: 1 runaway in settle)"
