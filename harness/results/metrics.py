"""One result row from a trial's ledger and marks, and nothing else: a registry of small metrics.

Each metric is a function of a parsed trial (`TrialView`: the ledger's events and the first mark of each name)
registered under the row field it fills, which harness/results/schema.py declares (type, unit, meaning).
`compute` runs them all. A new metric = its declaration in schema.py + one function here + its unit test
on a synthetic ledger (tests/test_metrics.py).

Times are relative to the `stop_called` mark. "After stop" means stamped after it. The stop phase
runs until `resume_started` (or the end); the resume phase after it.
A metric that could not be measured (the step never happened) is None, never 0.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from harness.billing import DEFAULT_PROFILE
from harness.clock import CENSUS_AFTER_S, SEND_LAG_MS, TRIGGER_TOLERANCE_MS
from harness.model_rule import RULE_BEFORE
from harness.results import schema
from harness.scenario import Offset, Scenario
from harness.vocabulary import ACTIVITY_EVENTS, AuditPhase, Event, Mark

NS_PER_MS = 1_000_000
#: the marks of the trial's observation steps; `quiet: false` in one of them makes the row a runaway
SETTLE_MARKS = (Mark.SETTLE, Mark.SETTLE_SAGA, Mark.SETTLE_RESUME)

LedgerEvent = dict[str, Any]


def _ms(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((b - a) / NS_PER_MS, 3)


def _runaway_settles(events: list[LedgerEvent]) -> list[LedgerEvent]:
    """The observation steps that ended at their deadline with the run not over (`quiet: false`)."""
    return [e for e in events if e["event"] == Event.MARK and e["name"] in SETTLE_MARKS
            and (e.get("data") or {}).get("quiet") is False]


def runaway_cut(events: list[LedgerEvent]) -> float:
    """Where a runaway's counts end: the deadline of its first observation that was not over by then (what
    lands during the harness's own audit and close after it is not counted); no cut for any other trial."""
    loud = _runaway_settles(events)
    if not loud:
        return float("inf")
    d = loud[0].get("data") or {}
    return d.get("deadline_at") or d.get("waited_until") or loud[0]["t"]


class TrialView:
    """A trial's ledger, parsed once: events by kind, the first mark of each name, the phases."""

    def __init__(self, events: list[LedgerEvent], scenario: Scenario, offset: Offset):
        self.events, self.scenario, self.offset = events, scenario, offset
        self.marks: dict[str, LedgerEvent] = {}  # first mark of each name (audits apart, by phase)
        self.audits: dict[str, LedgerEvent] = {}
        for e in events:
            if e["event"] != Event.MARK:
                continue
            if e["name"] == Mark.AUDIT:
                self.audits.setdefault((e.get("data") or {}).get("phase"), e)
            else:
                self.marks.setdefault(e["name"], e)
        self.pressed = self.t(Mark.STOP_CALLED)  # the harness pressed the button
        self.handled = self.t(Mark.STOP_HANDLED)  # an adapter in another process handled it (None: in process)
        #: the stop's moment: "after stop" counts from here; the world held its anchor until here
        self.stop_called = self.handled if self.pressed is not None and self.handled is not None else self.pressed
        self.stop_returned = self.t(Mark.STOP_RETURNED)
        self.resume_started = self.t(Mark.RESUME_STARTED)
        self.stopped = self.stop_called is not None  # else nothing "after stop" can be measured
        #: a served trial: the run was hosted by a server and stopped by its client (harness/trial/serve/)
        self.served = self.data(Mark.RUN_STARTED).get("serve_path") is not None
        self.cut = runaway_cut(events)  # a runaway's counts end at its observation's deadline
        self.end_stop_phase = min(self.resume_started if self.resume_started is not None else float("inf"),
                                  self.cut)

    def t(self, mark: str) -> int | None:
        m = self.marks.get(mark)
        return None if m is None else m["t"]

    def data(self, mark: str) -> dict[str, Any]:
        return (self.marks.get(mark) or {}).get("data") or {}

    def audit(self, phase: AuditPhase) -> dict[str, Any]:
        """What the audit of that phase found; {} when it did not run."""
        return (self.audits.get(phase) or {}).get("data") or {}

    def of(self, *kinds: Event) -> list[LedgerEvent]:
        return [e for e in self.events if e["event"] in kinds]

    def in_stop_phase(self, e: LedgerEvent) -> bool:
        return self.stopped and self.stop_called < e["t"] < self.end_stop_phase

    def in_resume(self, e: LedgerEvent) -> bool:
        return self.resume_started is not None and self.resume_started < e["t"] <= self.cut

    @cached_property
    def tokens(self) -> list[LedgerEvent]:
        return self.of(Event.TOKEN)

    @cached_property
    def requests(self) -> list[LedgerEvent]:
        return self.of(Event.LLM_REQUEST)

    @cached_property
    def received(self) -> dict[str, LedgerEvent]:
        return {e["effect_id"]: e for e in self.of(Event.EFFECT_RECEIVED)}

    @cached_property
    def committed(self) -> dict[str, LedgerEvent]:
        return {e["effect_id"]: e for e in self.of(Event.EFFECT_COMMITTED)}

    @cached_property
    def compensated(self) -> set[str]:
        return {e["effect_id"] for e in self.of(Event.COMPENSATION)}

    @cached_property
    def effects_after_stop(self) -> list[str]:
        """Effects committed after the stop that were received before resume (their ids)."""
        if not self.stopped:
            return []
        return [eid for eid, c in self.committed.items()
                if self.stop_called < c["t"] <= self.cut and self.received[eid]["t"] < self.end_stop_phase]

    @cached_property
    def in_flight(self) -> list[str]:
        """Effects after stop whose request was SENT by the stop (`sent_t`, the harness tools' stamp; the
        receipt `t` when there is none): of parallel calls sent together, one that reaches the world
        just after the stop is still in flight, not new work started after it."""
        return [eid for eid in self.effects_after_stop
                if self.received[eid].get("sent_t", self.received[eid]["t"]) <= self.stop_called]

    @cached_property
    def leaked(self) -> list[str]:
        return [eid for eid in self.effects_after_stop if eid not in self.compensated]

    @cached_property
    def orphans(self) -> dict[int, int]:
        """pid -> rss of every process of the run alive after close (found by the audit or reaped)."""
        out = {c["pid"]: c["rss"] for c in self.audit(AuditPhase.AFTER_CLOSE).get("children", [])}
        out.update({p["pid"]: p["rss"] for p in self.reaped})
        return out

    @cached_property
    def host_crashed(self) -> dict[str, Any] | None:
        """A host crash trial's observation of what outlived the host (harness/trial/reap.py HostCrash)."""
        return self.data(Mark.HOST_CRASHED) if Mark.HOST_CRASHED in self.marks else None

    @cached_property
    def reaped(self) -> list[dict[str, Any]]:
        return self.data(Mark.REAPED).get("processes", [])

    @property
    def resumed(self) -> bool:
        """Resume returned, within what the row counts: a resume after a runaway's cut is not measured."""
        return Mark.RESUME_RETURNED in self.marks and (self.resume_started or 0) < self.cut

    def turn_of(self, req: int) -> int:
        """The scripted turn a request was answered with; -1 for none (unknown, or calls the model asked again)."""
        return next((answered_turn(e) for e in self.requests if e["req"] == req), -1)


def answered_turn(request: dict[str, Any]) -> int:
    """The scripted turn an llm_request was answered with: a request answered with calls the model asked again
    (`asked_again`: their results read as failed) answered none, whatever turn the script was at."""
    return -1 if request.get("asked_again") else request["turn"]


@functools.cache
def metrics_digest() -> str:
    """A digest of the code a row's measured fields are derived with (this module and the schema): a row that
    records another was derived by other metric code (`stopbench rederive` derives it again from its evidence)."""
    h = hashlib.sha256()
    for module in (__file__, schema.__file__):
        h.update(Path(module).read_bytes())
    return h.hexdigest()[:12]


Metric = Callable[[TrialView], Any]
#: row field -> the metric that fills it, in registration order
METRICS: dict[str, Metric] = {}


def metric(name: str) -> Callable[[Metric], Metric]:
    """Register a function as the metric filling row field `name`, which the schema must declare."""
    declared = schema.field(name)
    if declared.source != "metrics":
        raise ValueError(f"{name!r} is written by the {declared.source}, not by a metric")

    def register(fn: Metric) -> Metric:
        if name in METRICS:
            raise ValueError(f"two metrics fill {name!r}")
        METRICS[name] = fn
        return fn

    return register


def compute(events: list[LedgerEvent], scenario: Scenario, offset: Offset) -> dict[str, Any]:
    """Every measured field of the row, in the schema's order."""
    trial = TrialView(events, scenario, offset)
    return {name: METRICS[name](trial) for name in schema.MEASURED}


def _if_stopped(trial: TrialView, value: Callable[[], Any]) -> Any:
    return value() if trial.stopped else None


# --- the button -------------------------------------------------------------------------------------------

@metric("stop_return_ms")
def stop_return_ms(tr: TrialView) -> float | None:
    return _ms(tr.pressed, tr.stop_returned)


@metric("stop_delivery_ms")
def stop_delivery_ms(tr: TrialView) -> float | None:
    """From the harness's press to the moment the adapter's own process handled the stop (its kit's stamp): the
    stop's way across the process boundary, the harness's and the machine's time, not the framework's. None for
    an adapter in the subject's own process."""
    return _ms(tr.pressed, tr.handled) if tr.handled is not None else None


def _served_end(tr: TrialView) -> int | None:
    """When the served run's job ended in the server, if it did within the stop's phase (before resume, the cut and
    the audit after the stop: the server's shutdown at close ends whatever is left, and that is no reaction)."""
    ended = tr.t(Mark.SERVED_RUN_ENDED)
    after_stop = (tr.audits.get(AuditPhase.AFTER_STOP) or {}).get("t", float("inf"))
    return ended if ended is not None and ended <= min(tr.end_stop_phase, after_stop) else None


@metric("served_stop_seen_ms")
def served_stop_seen_ms(tr: TrialView) -> float | None:
    """From the client's stop to the server's reaction (harness/trial/serve/hosted.py); None if it never reacted."""
    return _ms(tr.pressed, tr.t(Mark.SERVED_STOP_SEEN)) if tr.served and tr.pressed is not None else None


@metric("served_run_ended")
def served_run_ended(tr: TrialView) -> bool | None:
    """Whether the served run's job ended in the stop's phase; None in-process or when no stop was pressed."""
    return _served_end(tr) is not None if tr.served and tr.pressed is not None else None


@metric("served_run_ended_ms")
def served_run_ended_ms(tr: TrialView) -> float | None:
    return _ms(tr.pressed, _served_end(tr)) if tr.served else None


@metric("lie_ms")
def lie_ms(tr: TrialView) -> float | None:
    if tr.stop_returned is None:
        return None
    # compensations are the mitigation (or the adapter's own saga) undoing, not the run going on
    # nor are the tokens a provider bills after the client left (the provider going on, not the run)
    late = [e["t"] for e in tr.events if e["event"] in ACTIVITY_EVENTS
            and e["event"] not in (Event.PROCESS_REGISTERED, Event.COMPENSATION) and not e.get("unread")
            and tr.stop_returned < e["t"] < tr.end_stop_phase]
    return _ms(tr.stop_returned, max(late)) if late else 0.0


@metric("job_ended_ms")
def job_ended_ms(tr: TrialView) -> float | None:
    job = tr.marks.get(Mark.JOB_ENDED)
    return _ms(tr.pressed, job["t"]) if job and tr.pressed else None


@metric("job_error")
def job_error(tr: TrialView) -> str | None:
    return tr.data(Mark.JOB_ENDED).get("error") if Mark.JOB_ENDED in tr.marks else None


@metric("exit_status")
def exit_status(tr: TrialView) -> int | None:
    return tr.data(Mark.JOB_ENDED).get("exit_status") if Mark.JOB_ENDED in tr.marks else None


@metric("close_ok")
def close_ok(tr: TrialView) -> bool:
    return bool(tr.marks.get(Mark.CLOSED)) and not tr.data(Mark.CLOSED).get("error")


# --- the model --------------------------------------------------------------------------------------------

@metric("tokens_total")
def tokens_total(tr: TrialView) -> int:
    return len(tr.tokens)


@metric("tokens_after_stop")
def tokens_after_stop(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: sum(map(tr.in_stop_phase, tr.tokens)))


@metric("tokens_unread_after_stop")
def tokens_unread_after_stop(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: sum(tr.in_stop_phase(e) for e in tr.tokens if e.get("unread")))


@metric("billing_profile")
def billing_profile(tr: TrialView) -> str:
    created = tr.of(Event.RUN_CREATED)
    return str(created[0].get("billing") or DEFAULT_PROFILE.name) if created else DEFAULT_PROFILE.name


@metric("usage_reported_tokens")
def usage_reported_tokens(tr: TrialView) -> int | None:
    tokens = tr.data(Mark.USAGE_REPORTED).get("output_tokens")
    return tokens if isinstance(tokens, int) else None


@metric("usage_unreported_tokens")
def usage_unreported_tokens(tr: TrialView) -> int | None:
    reported = usage_reported_tokens(tr)
    if reported is None:
        return None
    return sum(e["t"] < tr.end_stop_phase for e in tr.tokens) - reported


@metric("model_rule")
def model_rule(tr: TrialView) -> str:
    created = tr.of(Event.RUN_CREATED)
    return str(created[0].get("model_rule") or RULE_BEFORE.name) if created else RULE_BEFORE.name


@metric("model_retries")
def model_retries(tr: TrialView) -> int:
    return len(tr.of(Event.TOOL_RETRY_ASKED))


@metric("llm_requests_after_stop")
def llm_requests_after_stop(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: sum(map(tr.in_stop_phase, tr.requests)))


@metric("llm_errors")
def llm_errors(tr: TrialView) -> int:
    return len(tr.of(Event.LLM_ERROR))


@metric("llm_requests_near_stop")
def llm_requests_near_stop(tr: TrialView) -> int | None:
    near = tr.stop_called + SEND_LAG_MS * NS_PER_MS if tr.stopped else 0
    return _if_stopped(tr, lambda: sum(tr.in_stop_phase(e) and e["t"] <= near for e in tr.requests))


# --- side effects ----------------------------------------------------------------------------------------

@metric("effects_committed_total")
def effects_committed_total(tr: TrialView) -> int:
    return len(tr.committed)


@metric("effects_after_stop")
def effects_after_stop(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: len(tr.effects_after_stop))


@metric("effects_in_flight")
def effects_in_flight(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: len(tr.in_flight))


@metric("effects_in_flight_client_gone")
def effects_in_flight_client_gone(tr: TrialView) -> int | None:
    """In-flight effects that committed after their client had gone (the world's `client_gone` on the commit):
    the cancel reached the tool's request before the service committed."""
    return _if_stopped(tr, lambda: sum(1 for eid in tr.in_flight if tr.committed[eid].get("client_gone")))


@metric("effects_new")
def effects_new(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: len(tr.effects_after_stop) - len(tr.in_flight))


@metric("effects_after_stop_by_kind")
def effects_after_stop_by_kind(tr: TrialView) -> dict[str, int] | None:
    return _if_stopped(tr, lambda: dict(sorted(Counter(tr.committed[e]["kind"] for e in tr.effects_after_stop)
                                               .items())))


@metric("effects_compensated")
def effects_compensated(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: len(tr.effects_after_stop) - len(tr.leaked))


@metric("effects_leaked")
def effects_leaked(tr: TrialView) -> int | None:
    return _if_stopped(tr, lambda: len(tr.leaked))


@metric("effects_aborted")
def effects_aborted(tr: TrialView) -> int:
    return len(tr.of(Event.EFFECT_ABORTED))


@metric("effect_duplicate_attempts")
def effect_duplicate_attempts(tr: TrialView) -> int:
    return len(tr.of(Event.EFFECT_DUPLICATE))


# --- what is still alive ---------------------------------------------------------------------------------

def _left_after_stop(tr: TrialView, what: str) -> int | None:
    found = tr.audit(AuditPhase.AFTER_STOP)
    return len(found.get(what, [])) if found else None


@metric("threads_left")
def threads_left(tr: TrialView) -> int | None:
    # a thread parked idle in an executor's queue runs nothing; it is counted apart from live ones
    return _left_after_stop(tr, "threads_busy")


@metric("idle_pool_threads")
def idle_pool_threads(tr: TrialView) -> int | None:
    found = tr.audit(AuditPhase.AFTER_STOP)
    return len(found.get("threads", [])) - len(found.get("threads_busy", [])) if found else None


@metric("tasks_left")
def tasks_left(tr: TrialView) -> int | None:
    return _left_after_stop(tr, "tasks")


@metric("children_left")
def children_left(tr: TrialView) -> int | None:
    return _left_after_stop(tr, "children")


@metric("sockets_left")
def sockets_left(tr: TrialView) -> int | None:
    return _left_after_stop(tr, "sockets")


@metric("orphans")
def orphans(tr: TrialView) -> int | None:
    return None if tr.host_crashed else len(tr.orphans)


@metric("orphan_rss_bytes")
def orphan_rss_bytes(tr: TrialView) -> int | None:
    return None if tr.host_crashed else sum(tr.orphans.values())


@metric("orphan_cpu_s")
def orphan_cpu_s(tr: TrialView) -> float | None:
    if tr.host_crashed or any("cpu_s" not in p for p in tr.reaped):
        return None
    return round(sum(p["cpu_s"] for p in tr.reaped), 4)


@metric("crash_orphans")
def crash_orphans(tr: TrialView) -> int | None:
    return None if tr.host_crashed is None else len(tr.host_crashed["survivors"])


@metric("crash_orphan_rss_bytes")
def crash_orphan_rss_bytes(tr: TrialView) -> int | None:
    return None if tr.host_crashed is None else sum(p["rss"] for p in tr.host_crashed["survivors"])


@metric("crash_orphan_cpu_s")
def crash_orphan_cpu_s(tr: TrialView) -> float | None:
    return None if tr.host_crashed is None else round(sum(p["cpu_s"] for p in tr.host_crashed["survivors"]), 4)


def _census(tr: TrialView, after_s: float) -> list[dict[str, Any]] | None:
    """The processes a census counted `after_s` after the stop (harness/trial/census.py); None without one."""
    counts = [e for e in tr.events if e["event"] == Event.MARK and e.get("name") == Mark.CENSUS
              and (e.get("data") or {}).get("after_s") == after_s]
    return counts[0]["data"]["processes"] if counts else None


@metric("survivors_5s")
def survivors_5s(tr: TrialView) -> int | None:
    found = _census(tr, CENSUS_AFTER_S[0])
    return None if found is None else len(found)


@metric("survivors_30s")
def survivors_30s(tr: TrialView) -> int | None:
    found = _census(tr, CENSUS_AFTER_S[-1])
    return None if found is None else len(found)


@metric("survivors_30s_rss_bytes")
def survivors_30s_rss_bytes(tr: TrialView) -> int | None:
    found = _census(tr, CENSUS_AFTER_S[-1])
    return None if found is None else sum(p["rss"] for p in found)


@metric("survivors_30s_cpu_s")
def survivors_30s_cpu_s(tr: TrialView) -> float | None:
    last, first = _census(tr, CENSUS_AFTER_S[-1]), _census(tr, CENSUS_AFTER_S[0])
    if last is None:
        return None
    before = {p["pid"]: p["cpu_s"] for p in first or []}
    return round(sum(p["cpu_s"] - before.get(p["pid"], 0.0) for p in last), 4)


@metric("reaped")
def reaped(tr: TrialView) -> int:
    return len(tr.reaped)


@metric("egress_attempts")
def egress_attempts(tr: TrialView) -> int | None:
    last = (tr.audit(AuditPhase.AFTER_CLOSE) or tr.audit(AuditPhase.AFTER_RESUME)
            or tr.audit(AuditPhase.AFTER_STOP))
    return len(last.get("egress", [])) if last else None


@metric("unattributed_requests")
def unattributed_requests(tr: TrialView) -> None:
    return None  # the world lists them per run of the runner, not per trial


# --- resume ----------------------------------------------------------------------------------------------

@metric("resume_ok")
def resume_ok(tr: TrialView) -> bool | None:
    if not tr.resumed:
        return None
    final_done = any(e["event"] == Event.RESPONSE_DONE and e.get("complete") and tr.in_resume(e)
                     and tr.turn_of(e["req"]) >= tr.scenario.final_turn for e in tr.events)
    return tr.data(Mark.RESUME_RETURNED).get("error") is None and final_done


@metric("resume_error")
def resume_error(tr: TrialView) -> str | None:
    if tr.resumed:
        return tr.data(Mark.RESUME_RETURNED).get("error")
    return "no resume" if Mark.RESUME_ABSENT in tr.marks else None


@metric("resume_llm_requests")
def resume_llm_requests(tr: TrialView) -> int | None:
    return sum(map(tr.in_resume, tr.requests)) if tr.resumed else None


@metric("resume_llm_replays")
def resume_llm_replays(tr: TrialView) -> int | None:
    """Model turns asked again while resuming that had a complete answer before the resume."""
    if not tr.resumed:
        return None
    t_resume = tr.resume_started
    done_before = {e["req"] for e in tr.of(Event.RESPONSE_DONE) if e.get("complete")
                   and (t_resume is None or e["t"] < t_resume)}
    turns_done = {answered_turn(e) for e in tr.requests if e["req"] in done_before} - {-1}
    return sum(1 for e in tr.requests if tr.in_resume(e) and answered_turn(e) in turns_done)


@metric("resume_tokens")
def resume_tokens(tr: TrialView) -> int | None:
    return sum(map(tr.in_resume, tr.tokens)) if tr.resumed else None


def _live_by_phase(tr: TrialView) -> tuple[Counter[str], Counter[str]]:
    """Logical keys of the effects committed and never compensated: (sent before `resume_started`, sent after).
    A call's phase is when the world received it, as for effects_after_stop: a call sent before the resume
    that lands after it started is not the resume's doing."""
    before: Counter[str] = Counter()
    during: Counter[str] = Counter()
    for eid, c in tr.committed.items():
        if eid not in tr.compensated:
            (during if tr.in_resume(tr.received.get(eid, c)) else before)[c["logical"]] += 1
    return before, during


@metric("resume_duplicate_effects")
def resume_duplicate_effects(tr: TrialView) -> int | None:
    """Logical effects of before the resume that the resume committed again, each counted once (further copies
    within the resume are retries). None when no resume started, or when it started after a runaway's cut (the
    counts end there: the resume was not observed), as resume_ok reads it."""
    if tr.resume_started is None or tr.resume_started >= tr.cut:
        return None
    before, during = _live_by_phase(tr)
    return sum(1 for key in during if key in before)


@metric("retry_duplicate_effects")
def retry_duplicate_effects(tr: TrialView) -> int:
    """Extra copies of a logical effect within one phase (before the resume, or within it): the agent retried a
    call. Apart from resume_duplicate_effects, so an adapter without resume is not said to repeat on resume."""
    return sum(n - 1 for phase in _live_by_phase(tr) for n in phase.values() if n > 1)


# --- trigger precision -----------------------------------------------------------------------------------

@metric("trigger_delay_ms")
def trigger_delay_ms(tr: TrialView) -> float | None:
    if not tr.stopped:
        return None
    if tr.offset.is_event:
        fired = next((e["t"] for e in tr.of(Event.ANCHOR_FIRED)), None)
        return _ms(fired, tr.pressed)
    planned = (tr.t(Mark.RUN_STARTED) or 0) + int(tr.offset.at_ms * NS_PER_MS)
    return _ms(planned, tr.pressed)


@metric("trigger_precise")
def trigger_precise(tr: TrialView) -> bool | None:
    """False when the stop fired later than TRIGGER_TOLERANCE_MS after its moment (a loaded machine): the
    row's counts stand (event anchors freeze the world until the stop), its timings are kept out of medians."""
    delay = trigger_delay_ms(tr)
    return None if delay is None else delay <= TRIGGER_TOLERANCE_MS


# --- the row's status --------------------------------------------------------------------------------------

class Outcome(NamedTuple):
    """How a trial ended: its row's `status`, `reason` and `failed_step` (the step the reason names)."""

    status: str
    reason: str | None = None
    failed_step: str | None = None


def status(events: list[LedgerEvent], exit_code: int | None, crash: str | None,
           killed_step: str | None) -> Outcome:
    """ok | failed | hung | runaway | skipped, with the reason and the step it went wrong in. Never a silent 0.

    runaway: a settle step's observation ended without the run going quiet (activity went on, or a request
    stayed open, until the deadline): what was measured is kept, but the counts are cut at the deadline.
    A crash or an exit outside any step names no step."""
    marks = [e for e in events if e["event"] == Event.MARK]
    if killed_step:
        return Outcome("hung", f"watchdog ended the subject during '{killed_step}'", killed_step)
    hung = [m for m in marks if m["name"] == Mark.HUNG]
    if hung:
        d = hung[0].get("data") or {}
        return Outcome("hung", f"'{d.get('step')}' overran {d.get('seconds')}s"
                       + (f": {d['note']}" if d.get("note") else ""), d.get("step"))
    errors = [m for m in marks if m["name"] == Mark.ERROR]
    if errors:
        d = errors[0].get("data") or {}
        return Outcome("failed", f"{d.get('step')}: {d.get('error')}", d.get("step"))
    if crash:
        return Outcome("failed", f"subject crashed: {crash}")
    loud = _runaway_settles(events)
    if loud:
        d = loud[0].get("data") or {}
        after = f"{d.get('deadline_s', '?')}s after the observation floor"
        if d.get("scheduled"):
            why = f"the run still had work scheduled {after}: {', '.join(d['scheduled'])}"
        else:
            why = f"the run was not quiet {after}"
        return Outcome("runaway", f"'{loud[0]['name']}': {why}", loud[0]["name"])
    skipped = [m for m in marks if m["name"] == Mark.SKIPPED]
    if skipped:
        return Outcome("skipped", (skipped[0].get("data") or {}).get("reason"))
    if exit_code not in (0, None):
        return Outcome("failed", f"subject exited with {exit_code} before finishing")
    if not any(m["name"] == Mark.STOP_RETURNED for m in marks):
        return Outcome("failed", "the trial never reached stop_returned")
    return Outcome("ok")
