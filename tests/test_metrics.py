"""Each metric on a synthetic ledger, as the world records one: exact numbers, no world, no subject.

A ledger is a list of events `{"t": ns, "event": ..., ...}`; the trial's marks are events named `mark` with a
`name` and `data`. Times here are written in ms and stored in ns, as the world stamps them.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.clock import SEND_LAG_MS
from harness.results import metrics, schema
from harness.results.metrics import compute, metric
from harness.scenario import load_scenarios, parse_offset
from harness.vocabulary import AuditPhase, Event, Mark

Q3 = load_scenarios()["q3_report"]  # three turns: the final answer is turn 2
AT = parse_offset("at:150ms")
ON_TOKEN = parse_offset("on:token:40")


class Ledger:
    """Builds a ledger in time order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def at(self, ms: float, event: Event, **data: Any) -> Ledger:
        self.events.append({"t": round(ms * 1_000_000), "event": event.value, **data})
        return self

    def mark(self, ms: float, name: Mark, data: dict[str, Any] | None = None) -> Ledger:
        self.events.append({"t": round(ms * 1_000_000), "event": Event.MARK.value, "name": name.value, "data": data})
        return self

    def audit(self, ms: float, phase: AuditPhase, **found: Any) -> Ledger:
        return self.mark(ms, Mark.AUDIT, {"phase": phase.value, **found})

    def effect(self, received_ms: float, committed_ms: float | None, eid: str, kind: str = "email",
               logical: str | None = None) -> Ledger:
        self.at(received_ms, Event.EFFECT_RECEIVED, kind=kind, effect_id=eid, idempotency_key=None)
        if committed_ms is not None:
            self.at(committed_ms, Event.EFFECT_COMMITTED, kind=kind, effect_id=eid, logical=logical or eid)
        return self

    def row(self, offset=AT) -> dict[str, Any]:
        self.events.sort(key=lambda e: e["t"])  # the world's ledger is in time order
        return compute(self.events, Q3, offset)


def stopped(at_ms: float = 100, returned_ms: float | None = 110) -> Ledger:
    """A run started at 0 whose stop was pressed at `at_ms` and returned at `returned_ms`."""
    led = Ledger().mark(0, Mark.RUN_STARTED).mark(at_ms, Mark.STOP_CALLED)
    return led.mark(returned_ms, Mark.STOP_RETURNED) if returned_ms is not None else led


# --- the button ---------------------------------------------------------------------------------------------

def test_stop_return_ms_is_rounded_to_the_microsecond():
    assert stopped(100, 112.3456789).row()["stop_return_ms"] == 12.346
    assert stopped(100, None).row()["stop_return_ms"] is None
    assert Ledger().row()["stop_return_ms"] is None


def test_lie_ms_is_the_last_activity_of_the_stop_phase_after_the_button_returned():
    led = stopped(100, 110)
    led.at(105, Event.TOKEN, req=1, i=0)  # before the button returned: not a lie
    led.at(160.5, Event.TOKEN, req=1, i=1)  # the run went on: the lie ends here
    led.at(300, Event.COMPENSATION, kind="email", effect_id="e1", committed=True)  # the saga undoing: not the run
    led.at(400, Event.PROCESS_REGISTERED, pid=1, role="mcp")  # an MCP server saying who it is: not the run
    led.at(450, Event.ANCHOR_RELEASED, what="x")  # the world talking, not the run
    led.mark(500, Mark.RESUME_STARTED)
    led.at(600, Event.TOKEN, req=2, i=0)  # resume phase: not counted
    assert led.row()["lie_ms"] == 50.5


def test_lie_ms_is_zero_when_nothing_happens_after_the_button_and_null_without_it():
    assert stopped(100, 110).at(50, Event.TOKEN, req=1, i=0).row()["lie_ms"] == 0.0
    assert stopped(100, None).at(150, Event.TOKEN, req=1, i=0).row()["lie_ms"] is None


def test_job_end_and_close():
    row = stopped().mark(130, Mark.JOB_ENDED, {"error": "CancelledError"}).mark(900, Mark.CLOSED, {}).row()
    assert (row["job_ended_ms"], row["job_error"], row["close_ok"]) == (30.0, "CancelledError", True)
    row = stopped().mark(90, Mark.JOB_ENDED, {}).mark(900, Mark.CLOSED, {"error": "boom"}).row()
    assert (row["job_ended_ms"], row["job_error"], row["close_ok"]) == (-10.0, None, False)
    row = stopped().row()
    assert (row["job_ended_ms"], row["job_error"], row["close_ok"]) == (None, None, False)


# --- the model ----------------------------------------------------------------------------------------------

def test_tokens_and_requests_after_stop_count_the_stop_phase_only():
    led = stopped(100, 110)
    led.at(10, Event.LLM_REQUEST, req=1, turn=0)
    for ms in (20, 30, 100):  # the token stamped at the very moment of the stop is not after it
        led.at(ms, Event.TOKEN, req=1, i=0)
    led.at(120, Event.LLM_REQUEST, req=2, turn=1)
    for ms in (130, 140, 150):
        led.at(ms, Event.TOKEN, req=2, i=0)
    led.mark(200, Mark.RESUME_STARTED)
    led.at(210, Event.LLM_REQUEST, req=3, turn=1)
    led.at(220, Event.TOKEN, req=3, i=0)
    row = led.row()
    assert row["tokens_total"] == 7
    assert row["tokens_after_stop"] == 3
    assert row["llm_requests_after_stop"] == 1


def test_tokens_billed_after_the_client_left_count_as_billed_not_as_the_run_going_on():
    """Unread tokens (the provider generating after the client left) are billed after the stop and counted
    apart; they do not stretch lie_ms. The row says the run's billing profile (rows of older ledgers: the
    default)."""
    led = stopped(100, 110).at(0, Event.RUN_CREATED, billing="runs_to_completion")
    led.at(10, Event.LLM_REQUEST, req=1, turn=0)
    led.at(20, Event.TOKEN, req=1, i=0).at(105, Event.TOKEN, req=1, i=1).at(115, Event.DISCONNECT, req=1, tokens=2)
    for i, ms in enumerate((130, 140, 150), 2):
        led.at(ms, Event.TOKEN, req=1, i=i, unread=True)
    row = led.row()
    assert (row["tokens_after_stop"], row["tokens_unread_after_stop"], row["tokens_total"]) == (4, 3, 5)
    assert row["lie_ms"] == 5.0  # to the disconnect, not to the last unread token
    assert row["billing_profile"] == "runs_to_completion"
    assert stopped().row()["billing_profile"] == "stops_at_disconnect"
    assert Ledger().row()["tokens_unread_after_stop"] is None


def test_the_row_says_the_model_rule_and_each_call_the_model_asked_for_again():
    """`model_rule` from run_created (a ledger of a world before rules: `count_results`); `model_retries` counts the
    ledger's tool_retry_asked, resume included."""
    led = stopped(100, 110).at(0, Event.RUN_CREATED, model_rule="retry_interrupted_tools")
    led.mark(200, Mark.RESUME_STARTED)
    led.at(210, Event.LLM_REQUEST, req=3, turn=2, asked_again=["call_r_1_0_again"])
    led.at(210, Event.TOOL_RETRY_ASKED, req=3, call_id="call_r_1_0", retry_id="call_r_1_0_again", tool="send_email",
           result="Tool was interrupted.", rule="retry_interrupted_tools")
    row = led.row()
    assert (row["model_rule"], row["model_retries"]) == ("retry_interrupted_tools", 1)
    old = stopped().at(0, Event.RUN_CREATED, billing="stops_at_disconnect").row()
    assert (old["model_rule"], old["model_retries"]) == ("count_results", 0)


def test_an_answer_of_calls_asked_again_is_no_scripted_turn():
    """A request answered with a call the model asked again (the world records the script's turn and
    `asked_again`) is not the final answer, nor a completed turn that resume could replay."""
    led = stopped(100, 110)
    led.at(10, Event.LLM_REQUEST, req=1, turn=0).at(20, Event.RESPONSE_DONE, req=1, tokens=5, complete=True)
    led.at(30, Event.LLM_REQUEST, req=2, turn=2, asked_again=["call_r_1_0_again"])
    led.at(40, Event.RESPONSE_DONE, req=2, tokens=5, complete=True)
    led.mark(200, Mark.RESUME_STARTED)
    led.at(210, Event.LLM_REQUEST, req=3, turn=2, asked_again=["call_r_1_0_again"])
    led.at(220, Event.RESPONSE_DONE, req=3, tokens=5, complete=True)
    led.mark(300, Mark.RESUME_RETURNED, {})
    row = led.row()
    assert (row["resume_ok"], row["resume_llm_replays"]) == (False, 0)
    led.at(310, Event.LLM_REQUEST, req=4, turn=2).at(320, Event.RESPONSE_DONE, req=4, tokens=9, complete=True)
    led.events = [e for e in led.events if e.get("name") != Mark.RESUME_RETURNED.value]
    led.mark(330, Mark.RESUME_RETURNED, {})
    row = led.row()
    assert (row["resume_ok"], row["resume_llm_replays"]) == (True, 0)


def test_nothing_after_stop_is_measured_without_a_stop():
    row = Ledger().at(10, Event.TOKEN, req=1, i=0).effect(20, 30, "e1").row()
    assert row["tokens_total"] == 1 and row["effects_committed_total"] == 1
    for name in ("tokens_after_stop", "llm_requests_after_stop", "effects_after_stop", "effects_in_flight",
                 "effects_new", "effects_after_stop_by_kind", "effects_compensated", "effects_leaked",
                 "trigger_delay_ms"):
        assert row[name] is None, name


# --- side effects -------------------------------------------------------------------------------------------

def test_effects_in_flight_new_leaked_and_compensated():
    led = stopped(100, 110)
    led.effect(60, 90, "before", kind="pr")  # committed before the stop: not after it
    led.effect(50, 150, "in-flight", kind="email")  # received before, committed after: in flight
    led.at(300, Event.COMPENSATION, kind="email", effect_id="in-flight", committed=True)  # ... and recalled
    led.effect(120, 170, "new", kind="chat")  # received after the stop: new, and it leaks
    led.effect(130, 360, "slow", kind="email")  # received in the stop phase, committed during resume: counted
    led.mark(350, Mark.RESUME_STARTED)
    led.effect(400, 420, "resumed", kind="calendar")  # the resume's own effect: not "after stop"
    led.effect(430, None, "aborted", kind="email").at(440, Event.EFFECT_ABORTED, kind="email", effect_id="aborted")
    led.at(450, Event.EFFECT_DUPLICATE, kind="email", effect_id="new", idempotency_key="k")
    row = led.row()
    assert row["effects_committed_total"] == 5
    assert row["effects_after_stop"] == 3
    assert row["effects_in_flight"] == 1
    assert row["effects_new"] == 2
    assert row["effects_after_stop_by_kind"] == {"chat": 1, "email": 2}
    assert list(row["effects_after_stop_by_kind"]) == ["chat", "email"]  # sorted by kind
    assert row["effects_compensated"] == 1
    assert row["effects_leaked"] == 2
    assert row["effects_aborted"] == 1
    assert row["effect_duplicate_attempts"] == 1


def test_an_effect_received_at_the_stop_is_in_flight():
    row = stopped(100).effect(100, 120, "e").row()
    assert (row["effects_in_flight"], row["effects_new"]) == (1, 0)


# --- what is still alive --------------------------------------------------------------------------------------

def test_threads_tasks_children_sockets_from_the_audit_after_stop():
    led = stopped().audit(400, AuditPhase.AFTER_STOP, threads=["a", "b", "c"], threads_busy=["b"], tasks=["t"],
                          children=[{"pid": 7, "rss": 10}], sockets=[], egress=["1.2.3.4:443", "dns"])
    row = led.row()
    assert (row["threads_left"], row["idle_pool_threads"], row["tasks_left"], row["children_left"],
            row["sockets_left"]) == (1, 2, 1, 1, 0)
    assert row["egress_attempts"] == 2  # the last audit there is: here the one after stop


def test_orphans_are_what_the_audit_after_close_found_and_what_was_reaped():
    led = stopped().audit(400, AuditPhase.AFTER_STOP, threads=[], threads_busy=[], egress=["x", "y"])
    led.audit(900, AuditPhase.AFTER_CLOSE, children=[{"pid": 11, "rss": 1000}], egress=["x"])
    led.mark(950, Mark.REAPED, {"processes": [{"pid": 11, "rss": 1000}, {"pid": 12, "rss": 500}]})
    row = led.row()
    assert (row["orphans"], row["orphan_rss_bytes"], row["reaped"]) == (2, 1500, 2)  # pid 11 counted once
    assert row["egress_attempts"] == 1  # the audit after close is the last one


def test_alive_without_audits():
    row = stopped().row()
    for name in ("threads_left", "idle_pool_threads", "tasks_left", "children_left", "sockets_left",
                 "egress_attempts"):
        assert row[name] is None, name
    assert (row["orphans"], row["orphan_rss_bytes"], row["reaped"]) == (0, 0, 0)
    assert row["unattributed_requests"] is None  # the runner reports those per run, not per row


def test_egress_falls_back_to_the_audit_after_resume():
    led = stopped().audit(400, AuditPhase.AFTER_STOP, egress=[]).audit(800, AuditPhase.AFTER_RESUME, egress=["a"])
    assert led.row()["egress_attempts"] == 1


# --- resume -----------------------------------------------------------------------------------------------------

def resumed_run(error: str | None = None, final: bool = True) -> Ledger:
    led = stopped(100, 110)
    led.at(10, Event.LLM_REQUEST, req=1, turn=0).at(20, Event.RESPONSE_DONE, req=1, tokens=6, complete=True)
    led.at(30, Event.LLM_REQUEST, req=2, turn=1)  # cut by the stop: not complete
    led.at(105, Event.RESPONSE_DONE, req=2, tokens=0, complete=False)
    led.effect(40, 50, "e1", logical="email:board")
    led.effect(60, 70, "c1", kind="chat", logical="chat:hi")
    led.mark(200, Mark.RESUME_STARTED)
    led.at(210, Event.LLM_REQUEST, req=3, turn=0)  # turn 0 was answered before: a replay
    led.at(215, Event.TOKEN, req=3, i=0).at(216, Event.TOKEN, req=3, i=1)
    led.at(220, Event.RESPONSE_DONE, req=3, tokens=2, complete=True)
    led.at(230, Event.LLM_REQUEST, req=4, turn=1)  # turn 1 never completed: not a replay
    led.effect(240, 250, "e2", logical="email:board")  # the same email again: a duplicate
    led.effect(255, 260, "c2", kind="chat", logical="chat:hi")  # the same chat again, but the first is deleted
    led.at(265, Event.COMPENSATION, kind="chat", effect_id="c1", committed=True)
    led.at(270, Event.LLM_REQUEST, req=5, turn=2)
    led.at(275, Event.TOKEN, req=5, i=0)
    if final:
        led.at(280, Event.RESPONSE_DONE, req=5, tokens=1, complete=True)
    return led.mark(300, Mark.RESUME_RETURNED, {"error": error} if error else {})


def test_resume_replays_tokens_and_duplicate_effects():
    row = resumed_run().row()
    assert row["resume_ok"] is True and row["resume_error"] is None
    assert row["resume_llm_requests"] == 3
    assert row["resume_llm_replays"] == 1
    assert row["resume_tokens"] == 3
    assert row["resume_duplicate_effects"] == 1  # email:board twice; chat:hi's first copy was compensated


def test_resume_that_raised_or_never_reached_the_final_answer_is_not_ok():
    row = resumed_run(error="ValueError: no checkpoint").row()
    assert row["resume_ok"] is False and row["resume_error"] == "ValueError: no checkpoint"
    assert resumed_run(final=False).row()["resume_ok"] is False


def test_no_resume():
    row = stopped().mark(200, Mark.RESUME_ABSENT).row()
    assert (row["resume_ok"], row["resume_error"], row["resume_llm_requests"], row["resume_llm_replays"],
            row["resume_tokens"]) == (None, "no resume", None, None, None)
    assert stopped().row()["resume_error"] is None  # the trial never got that far
    row = stopped().effect(1, 2, "a", logical="x").effect(3, 4, "b", logical="x").effect(5, 6, "c", logical="x").row()
    # three of one logical effect, no resume: two retries, and no resume that could repeat one
    assert (row["resume_duplicate_effects"], row["retry_duplicate_effects"]) == (None, 2)


# --- trigger precision -------------------------------------------------------------------------------------------

def test_trigger_delay_from_the_anchor_or_the_planned_time():
    led = Ledger().mark(10, Mark.RUN_STARTED).at(100, Event.ANCHOR_FIRED, anchor="on:token:40")
    assert led.mark(101.5, Mark.STOP_CALLED).row(ON_TOKEN)["trigger_delay_ms"] == 1.5
    led = Ledger().mark(10, Mark.RUN_STARTED).mark(161.25, Mark.STOP_CALLED)
    assert led.row(AT)["trigger_delay_ms"] == 1.25  # planned at 10 + 150 ms
    assert Ledger().mark(10, Mark.RUN_STARTED).row(AT)["trigger_delay_ms"] is None


# --- the registry and the schema ------------------------------------------------------------------------------------

def test_compute_fills_exactly_the_declared_measured_fields_with_values_of_their_type():
    assert set(metrics.METRICS) == set(schema.MEASURED)
    for led in (Ledger(), stopped(), resumed_run()):
        row = led.row()
        assert list(row) == list(schema.MEASURED)
        assert schema.problems({**row, **{k: "x" if schema.FIELDS[k].type is str else 1
                                          for k in schema.REQUIRED}}) == []


def test_a_metric_must_be_declared_once_as_measured():
    with pytest.raises(KeyError, match="not a row field"):
        metric("tokens_before_stop")
    with pytest.raises(ValueError, match="written by the runner"):
        metric("adapter")
    with pytest.raises(ValueError, match="two metrics"):
        metric("lie_ms")(lambda trial: 0)


def test_status():
    """Each way a trial ends, with its reason and the step it went wrong in (`failed_step`: a field of its own,
    the step the reason names; none when no step is to blame)."""
    ok = stopped().events
    assert metrics.status(ok, 0, None, None) == ("ok", None, None)
    assert metrics.status(stopped(100, None).events, 0, None, None) == (
        "failed", "the trial never reached stop_returned", None)
    hung = stopped().mark(200, Mark.HUNG, {"step": "stop", "seconds": 5}).events
    assert metrics.status(hung, 0, None, None) == ("hung", "'stop' overran 5s", "stop")
    wait = stopped().mark(200, Mark.HUNG, {"step": "wait", "seconds": 5, "note": "the job did not end"}).events
    assert metrics.status(wait, 0, None, None) == ("hung", "'wait' overran 5s: the job did not end", "wait")
    err = stopped().mark(200, Mark.ERROR, {"step": "resume", "error": "boom"}).events
    assert metrics.status(err, 0, None, None) == ("failed", "resume: boom", "resume")
    assert metrics.status(ok, 0, None, "settle") == ("hung", "watchdog ended the subject during 'settle'", "settle")
    loud = stopped().mark(300, Mark.SETTLE_RESUME, {"quiet": False, "deadline_s": 10}).events
    assert metrics.status(loud, 0, None, None) == (
        "runaway", "'settle_resume': the run was not quiet 10s after the observation floor", "settle_resume")
    assert metrics.status(ok, 0, "MemoryError", None) == ("failed", "subject crashed: MemoryError", None)
    assert metrics.status(ok, 3, None, None) == ("failed", "subject exited with 3 before finishing", None)
    skipped = Ledger().mark(5, Mark.SKIPPED, {"reason": "job ended first"}).events
    assert metrics.status(skipped, 0, None, None) == ("skipped", "job ended first", None)
    assert metrics.status(err, 0, None, None)._asdict() == {"status": "failed", "reason": "resume: boom",
                                                           "failed_step": "resume"}  # the row's three fields


def test_in_flight_is_decided_by_when_the_request_was_sent():
    """Issue #11 case 7: a call sent before the stop that reaches the world after it is in flight, not new."""
    led = stopped(100, 110)
    led.effect(130, 200, "sent-before", kind="calendar")  # received after the stop ...
    led.events[-2]["sent_t"] = 95_000_000  # ... but sent at 95 ms: in flight
    led.effect(140, 210, "sent-after", kind="chat")
    led.events[-2]["sent_t"] = 120_000_000  # sent at 120 ms: new
    led.effect(90, 220, "no-stamp-before", kind="email")  # no sent_t (not the harness's tools): its receipt
    led.effect(150, 230, "no-stamp-after", kind="pr")
    row = led.row()
    assert row["effects_after_stop"] == 4
    assert (row["effects_in_flight"], row["effects_new"]) == (2, 2)


# --- duplicates split by cause (issue #11, case 5) ------------------------------------------------------------

def test_a_retry_without_resume_is_not_a_resume_duplicate():
    """The same email committed twice before any resume: the agent retried; no resume started, so none repeated."""
    row = stopped(100, 110).effect(10, 20, "e1", logical="email:board").effect(30, 40, "e2", logical="email:board")\
        .row()
    assert (row["resume_duplicate_effects"], row["retry_duplicate_effects"]) == (None, 1)
    row = stopped(100, 110).mark(200, Mark.RESUME_ABSENT).effect(10, 20, "e1", logical="x").row()
    assert (row["resume_duplicate_effects"], row["retry_duplicate_effects"]) == (None, 0)  # the adapter has none


def test_resume_duplicates_are_effects_of_before_the_resume_committed_again_by_it():
    led = stopped(100, 110)
    led.effect(10, 20, "e1", logical="email:board")
    led.effect(30, 40, "e1-retry", logical="email:board")  # a retry before the resume
    led.effect(50, 60, "p1", kind="pr", logical="pr:fix")
    led.effect(70, 80, "c1", kind="chat", logical="chat:hi")
    led.effect(90, 250, "slow", kind="calendar", logical="cal:q3")  # sent before the resume, lands after it started
    led.mark(200, Mark.RESUME_STARTED)
    led.effect(210, 220, "e2", logical="email:board")  # the resume sends the email again ...
    led.effect(230, 240, "e3", logical="email:board")  # ... and retries it: one resume duplicate, one retry
    led.effect(260, 270, "p2", kind="pr", logical="pr:fix")  # the PR again, but its first copy is closed
    led.at(275, Event.COMPENSATION, kind="pr", effect_id="p1", committed=True)
    led.effect(280, 290, "c2", kind="chat", logical="chat:new")  # new work: no twin
    led.effect(300, 310, "cal2", kind="calendar", logical="cal:q3")  # the resume repeats the slow invite
    led.mark(400, Mark.RESUME_RETURNED, {})
    row = led.row()
    assert row["resume_duplicate_effects"] == 2  # email:board and cal:q3, each once
    assert row["retry_duplicate_effects"] == 2  # email:board once before the resume and once within it
    assert row["effects_committed_total"] == 10


def test_a_resume_that_repeats_nothing_and_the_resume_phase_alone():
    led = stopped(100, 110).effect(10, 20, "e1", logical="x").mark(200, Mark.RESUME_STARTED)
    assert (led.row()["resume_duplicate_effects"], led.row()["retry_duplicate_effects"]) == (0, 0)
    led.effect(210, 220, "n1", logical="y").effect(230, 240, "n2", logical="y")  # a retry of new work in the resume
    assert (led.row()["resume_duplicate_effects"], led.row()["retry_duplicate_effects"]) == (0, 1)
    # a resume that started and hung (no resume_returned) still measures what it committed
    assert led.effect(250, 260, "x2", logical="x").row()["resume_duplicate_effects"] == 1


# --- model requests near the press, and a runaway's cut ------------------------------------------------------

def test_model_requests_that_arrive_within_the_send_lag_of_the_press_are_counted_apart():
    led = stopped(at_ms=100)
    led.at(90, Event.LLM_REQUEST, req=1, turn=0)  # before the press
    led.at(100 + SEND_LAG_MS - 1, Event.LLM_REQUEST, req=2, turn=1)  # may have left before it
    led.at(100 + SEND_LAG_MS + 1, Event.LLM_REQUEST, req=3, turn=1)  # left after it
    row = led.row()
    assert (row["llm_requests_after_stop"], row["llm_requests_near_stop"]) == (2, 1)


def test_a_runaways_counts_end_at_its_deadline():
    led = stopped(at_ms=100)
    led.effect(150, 200, "email_1").effect(250, 300, "chat_1", kind="chat")
    led.at(310, Event.TOKEN, req=1, i=0)
    led.mark(400, Mark.SETTLE, {"quiet": False, "world_quiet": True, "scheduled": ["task 'poster' timer"],
                                "deadline_at": round(305 * 1e6), "deadline_s": 5})
    led.effect(410, 450, "email_2")  # during the harness's own audit and close
    row = led.row()
    assert (row["effects_after_stop"], row["effects_leaked"], row["tokens_after_stop"]) == (2, 2, 0)
    assert row["effects_after_stop_by_kind"] == {"chat": 1, "email": 1}


def test_a_resume_after_a_runaways_cut_is_not_measured():
    led = stopped(at_ms=100)
    led.mark(400, Mark.SETTLE, {"quiet": False, "world_quiet": True, "scheduled": ["task 'poster' timer"],
                                "deadline_at": round(305 * 1e6), "deadline_s": 5})
    led.mark(410, Mark.RESUME_STARTED).at(420, Event.LLM_REQUEST, req=1, turn=0).mark(500, Mark.RESUME_RETURNED)
    row = led.row()
    assert (row["resume_ok"], row["resume_llm_requests"], row["resume_tokens"]) == (None, None, None)
    assert row["resume_duplicate_effects"] is None  # not 0: nothing of the resume was observed


def test_an_in_flight_effect_committed_after_its_client_left_is_counted_apart():
    led = stopped(at_ms=100)
    led.effect(90, None, "email_1").at(150, Event.EFFECT_COMMITTED, kind="email", effect_id="email_1",
                                         logical="email_1", client_gone=True)
    led.effect(95, 160, "chat_1", kind="chat")  # the client still waited for this one
    row = led.row()
    assert (row["effects_in_flight"], row["effects_in_flight_client_gone"]) == (2, 1)


def test_rederive_derives_rows_again_from_their_evidence_and_says_what_changed(tmp_path):
    """A row written by older metric code (a resume after a runaway's cut counted 0, no in-flight client field):
    derived again from its kept ledger, with the digest of the code that derived it; a row without evidence stays."""
    import json

    from harness.results.evidence import append_evidence
    from harness.results.metrics import metrics_digest
    from harness.results.rederive import rederive

    led = stopped(at_ms=100)
    led.mark(400, Mark.SETTLE, {"quiet": False, "world_quiet": True, "scheduled": ["task 'poster' timer"],
                                "deadline_at": round(305 * 1e6), "deadline_s": 5})
    led.mark(410, Mark.RESUME_STARTED).mark(500, Mark.RESUME_RETURNED)
    led.events.sort(key=lambda e: e["t"])
    fresh = compute(led.events, Q3, AT)
    old = {**fresh, "resume_duplicate_effects": 0, "trial_id": "t1", "run_id": "r1", "scenario": "q3_report",
           "scenario_hash": Q3.digest, "offset": "at:150ms", "status": "runaway"}
    del old["effects_in_flight_client_gone"]
    orphan = {**old, "trial_id": "t2", "run_id": "r2"}
    raw = tmp_path / "raw" / "fw.jsonl"
    raw.parent.mkdir()
    raw.write_text(json.dumps(old) + "\n" + json.dumps(orphan) + "\nnot json\n")
    append_evidence(tmp_path / "evidence" / "fw.jsonl.gz", "t1", "r1", led.events)
    done = rederive(tmp_path, {"q3_report": Q3})
    assert (done.rows, done.rederived, done.changed, done.no_evidence) == (2, 1, 1, 1)
    assert dict(done.fields) == {"effects_in_flight_client_gone": 1, "resume_duplicate_effects": 1}
    first, second, third = raw.read_text().splitlines()
    row = json.loads(first)
    assert (row["resume_duplicate_effects"], row["effects_in_flight_client_gone"], row["status"]) == \
        (None, 0, "runaway")
    assert row["metrics_digest"] == metrics_digest()
    assert json.loads(second) == orphan and third == "not json"
