"""The shared vocabulary: every ledger event, mark and audit phase, named once.

The world records events; the trial stamps marks (an event named `mark` with a `name`); the metrics
read both. All three import these names from here, so a name cannot drift between writer and reader.
They are `StrEnum`s: each member is its string, so rows and ledgers stay plain JSON.
(trio's cancellation vocabulary is the model: one word per moment, used everywhere.)
"""

from __future__ import annotations

from enum import StrEnum

#: the owner marker every process stopbench starts carries: harness/owner.py

#: request header carrying when the harness's tool transport sent the request (time.monotonic_ns(), the
#: one clock of ledger and marks); the world records it on `effect_received` as `sent_t`, so "in flight at
#: the stop" is decided by when the call left, not by when its bytes happened to arrive
SENT_HEADER = "X-Stopbench-Sent-Ns"


class Event(StrEnum):
    """What the world records in a run's ledger."""

    RUN_CREATED = "run_created"
    MARK = "mark"  # the trial's own stamp; its `name` is a Mark
    LLM_REQUEST = "llm_request"
    TOKEN = "token"
    DISCONNECT = "disconnect"  # the client went away mid-stream
    RESPONSE_DONE = "response_done"
    LLM_ERROR = "llm_error"  # a scripted provider fault was sent (data: req, kind, status?, n)
    EFFECT_RECEIVED = "effect_received"
    EFFECT_COMMITTED = "effect_committed"
    EFFECT_ABORTED = "effect_aborted"
    EFFECT_DUPLICATE = "effect_duplicate"  # a repeated Idempotency-Key, answered from the first call
    COMPENSATION = "compensation"
    READ = "read"
    PROCESS_REGISTERED = "process_registered"  # a process of an MCP launch said who it is (data.role)
    #: the model asked for a call again because its result read as interrupted or as an error (the scenario's
    #: model rule, harness/model_rule.py; data: req, call_id, retry_id, tool, result, rule)
    TOOL_RETRY_ASKED = "tool_retry_asked"
    ANCHOR_FIRED = "anchor_fired"
    ANCHOR_RELEASED = "anchor_released"


#: events that are the run's own activity (marks and anchors are the trial and the world talking)
ACTIVITY_EVENTS = frozenset({
    Event.LLM_REQUEST, Event.TOKEN, Event.DISCONNECT, Event.RESPONSE_DONE, Event.LLM_ERROR, Event.EFFECT_RECEIVED,
    Event.EFFECT_COMMITTED, Event.EFFECT_ABORTED, Event.EFFECT_DUPLICATE, Event.COMPENSATION, Event.READ,
    Event.PROCESS_REGISTERED,
})


#: the serving path of a trial with no server: the harness presses the framework's button in its own process
#: (harness/trial/serve/paths.py has the others; rows written without `serve_path` read as this)
IN_PROCESS = "in-process"


class Mark(StrEnum):
    """The trial's marks, in the order a trial stamps them."""

    AUDIT = "audit"  # with data.phase, an AuditPhase
    SKIPPED = "skipped"
    RUN_STARTED = "run_started"  # start() is called
    STOP_CALLED = "stop_called"  # the button is pressed: every "after stop" counts from here
    STOP_RETURNED = "stop_returned"  # the button says it has stopped
    #: an adapter in another process handled the stop (its kit stamped the moment before pressing the framework's
    #: primitive): its "after stop" counts from here, the world holds its anchor until here, and the time from
    #: stop_called is the stop's delivery
    STOP_HANDLED = "stop_handled"
    JOB_ENDED = "job_ended"
    #: what the framework's own usage accounting says the stopped run used (data.output_tokens; None: it reports
    #: none), read once the stop phase settled: a number the framework says about itself, set beside the world's
    USAGE_REPORTED = "usage_reported"
    SAGA = "saga"  # the saga mitigation compensated (data.compensated)
    SAGA_LATE = "saga_late"
    CENSUS = "census"  # processes of the run alive a fixed time after the stop (data.after_s, data.processes)
    SETTLE = "settle"  # the run went quiet (data: the world's quiet answer)
    SETTLE_SAGA = "settle_saga"
    RESUME_STARTED = "resume_started"  # the resume phase begins
    RESUME_RETURNED = "resume_returned"
    RESUME_ABSENT = "resume_absent"
    SETTLE_RESUME = "settle_resume"
    CLOSED = "closed"
    HOST_CRASH = "host_crash"  # host crash trials: the subject waits here to be SIGKILLed by its parent
    HOST_CRASHED = "host_crashed"  # posted by the parent: what of the run outlived the host (data.survivors)
    HUNG = "hung"  # a step overran its deadline (data.step, data.seconds)
    ERROR = "error"  # the adapter or framework raised (data.step, data.error)
    WATCHDOG_KILLED = "watchdog_killed"
    REAPED = "reaped"  # what the harness had to kill (data.processes)
    #: a served trial (harness/trial/serve/): the server saw the client's stop (data.how: disconnect or cancel) and
    #: pressed the framework's button; a server that never reacts never posts it
    SERVED_STOP_SEEN = "served_stop_seen"
    SERVED_STOP_RETURNED = "served_stop_returned"  # the framework's button returned, in the server
    SERVED_RUN_ENDED = "served_run_ended"  # the hosted run's job ended, in the server (data.ended, data.error)


class AuditPhase(StrEnum):
    BASELINE = "baseline"
    AFTER_STOP = "after_stop"
    AFTER_RESUME = "after_resume"
    AFTER_CLOSE = "after_close"
