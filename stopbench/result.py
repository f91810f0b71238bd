"""What a trial saw after the stop, in words a failing test can print.

The counts are the row's, computed by the trial's metrics (harness/results/metrics.py); the effects they count
are named from the same metrics' view of the ledger, so "after the stop" has one definition: stamped after
`stop_called`, before `resume_started`.

The assertions judge what the agent controls: the requests and effects it sends after the stop and the tokens it
keeps reading. Tokens a provider generates for a non-streamed request sent before the stop are billed whatever the
client does (it cannot stop a generation it is not reading); they are reported (`notes`) and asserted only when a
test asks (`max_billed_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness.results.metrics import TrialView
from harness.vocabulary import AuditPhase

#: tokens the world may stream after the stop before a careful client has closed the stream: at the shipped
#: scenarios' 400 tokens/s, 5 tokens are ~12 ms of reaction (a client that checks its stop flag per chunk)
MAX_TOKENS = 5


class StopLied(AssertionError):
    """The agent's stop button said stopped, and the world saw otherwise."""


class StopHung(AssertionError):
    """A step of the trial (the stop, most often) did not return within its deadline: the watchdog ended it."""


class StopFailed(AssertionError):
    """The framework (or the adapter's use of it) raised: the trial failed in one of its steps."""


class ResumeRepeated(AssertionError):
    """Resuming the stopped run committed again a side effect that had already been committed before it."""


class ProcessesLeft(AssertionError):
    """Processes of the run (an MCP server, a worker) were still alive after the app closed the agent."""


def _args(received: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={v}" for k, v in (received.get("args") or {}).items())
    return f": {args}" if args else ""


@dataclass
class TrialResult:
    """A trial's row (every field: harness/results/schema.py), its ledger (the evidence behind the row) and
    the metrics' view of that ledger (which effects and tokens the row's counts count)."""

    row: dict[str, Any]
    events: list[dict[str, Any]]
    trial: TrialView

    def __getitem__(self, field: str) -> Any:
        return self.row[field]

    @cached_property
    def _billed_requests(self) -> set[int]:
        """Non-streamed requests that reached the provider by the stop: their answers are generated in full."""
        pressed = self.trial.stop_called
        return {e["req"] for e in self.trial.requests
                if not e.get("stream") and pressed is not None and e["t"] <= pressed}

    @property
    def billed_tokens(self) -> int:
        """Tokens generated after the stop for a non-streamed request sent before it: the provider's, not the
        agent's (part of the row's tokens_after_stop)."""
        return sum(1 for e in self.trial.tokens
                   if self.trial.in_stop_phase(e) and e["req"] in self._billed_requests)

    @property
    def read_tokens(self) -> int:
        """Tokens after the stop the agent is answerable for: those it kept reading from a stream, and those of
        requests it sent after the stop."""
        return (self.row.get("tokens_after_stop") or 0) - self.billed_tokens

    def _read(self) -> str:
        """The agent's tokens after the stop: streamed from a request of before it, or of requests after it."""
        pressed, n = self._pressed, self.read_tokens
        late_requests = {e["req"] for e in self.trial.requests if e["t"] > pressed}
        late = sum(1 for e in self.trial.tokens if self.trial.in_stop_phase(e) and e["req"] in late_requests)
        if not late:
            return f"{n} tokens streamed after the stop"
        if late == n:
            return f"{n} tokens generated after the stop for requests sent after it"
        return f"{n} tokens after the stop: {n - late} streamed from a request sent before it, {late} for requests " \
               "sent after it"

    def _billed(self) -> str:
        n = len({e["req"] for e in self.trial.tokens
                 if self.trial.in_stop_phase(e) and e["req"] in self._billed_requests})
        return (f"{self.billed_tokens} tokens billed after the stop for {n} non-streamed request(s) sent before it "
                "(a provider generates a non-streamed answer in full whatever the client does)")

    def notes(self) -> list[str]:
        """What the trial saw after the stop that the assertions do not hold against the agent, and why."""
        if not self.billed_tokens:
            return []
        return [f"{self._billed()}; assert them with assert_stopped(max_billed_tokens=N)"]

    @property
    def _pressed(self) -> int:
        """`stop_called`: anything the row counts after the stop has one."""
        called = self.trial.stop_called
        assert called is not None, "a count after the stop without a stop"
        return int(called)

    def _ms_after_return(self, t: int) -> str:
        returned = self.trial.stop_returned
        if returned is None:
            return f"{(t - self._pressed) / 1e6:.0f} ms after the stop was pressed"
        delta = (t - returned) / 1e6
        return f"{abs(delta):.0f} ms {'after' if delta >= 0 else 'before'} stop returned"

    def problems(self, max_tokens: int = MAX_TOKENS, max_billed_tokens: int | None = None) -> list[str]:
        """Everything that happened after the stop that an honest stop would not have let happen; billed tokens
        (see `billed_tokens`) only when `max_billed_tokens` is given."""
        r, out = self.row, []
        if r["status"] != "ok":
            out.append(f"the trial is {r['status']}: {r['reason']}")
        if self.read_tokens > max_tokens:
            out.append(f"{self._read()} (allowed: {max_tokens})")
        if max_billed_tokens is not None and self.billed_tokens > max_billed_tokens:
            out.append(f"{self._billed()} (allowed: {max_billed_tokens})")
        if r.get("llm_requests_after_stop"):
            out.append(f"the model was asked {r['llm_requests_after_stop']} more time(s) after the stop")
        out += self.leaked_effects()
        for p in self._reaped():
            out.append(f"process pid {p['pid']} still alive after close: {p.get('cmdline', '?')}")
        if r.get("threads_left"):
            names = ", ".join(t.get("name", "?") for t in self._busy_threads()) or "?"
            out.append(f"{r['threads_left']} thread(s) still running after the stop: {names}")
        return out

    def leaked_effects(self) -> list[str]:
        """The effects the row counts after the stop that the button should have prevented, each named: a new
        one (`effects_new`: its request sent after the stop was pressed), `1 email sent 200 ms after the stop was
        pressed (email_2: to=...)`; and one in flight at the stop that landed after the button said stopped and
        stays (`effects_leaked`), `1 email in flight at the stop committed 12 ms after stop returned (email_1:
        ...)`. An effect in flight that landed before the button returned is not a lie: the button waited for it
        (assert_nothing_leaked asks that it be undone too)."""
        tr = self.trial
        in_flight, leaked = set(tr.in_flight), set(tr.leaked)
        out = []
        for eid in tr.effects_after_stop:
            received, committed = tr.received[eid], tr.committed[eid]
            what = f"({eid}{_args(received)})"
            if eid not in in_flight:
                sent: int = received.get("sent_t") or received["t"]
                out.append(f"1 {committed['kind']} sent {(sent - self._pressed) / 1e6:.0f} ms after the stop was "
                           f"pressed {what}")
            elif eid in leaked and (tr.stop_returned is None or committed["t"] > tr.stop_returned):
                out.append(f"1 {committed['kind']} in flight at the stop committed "
                           f"{self._ms_after_return(committed['t'])} {what}")
        return out

    def _reaped(self) -> list[dict[str, Any]]:
        return list(self.trial.reaped)

    def _busy_threads(self) -> list[dict[str, Any]]:
        threads = self.trial.audit(AuditPhase.AFTER_STOP).get("threads_busy", [])
        return [t for t in threads if isinstance(t, dict)]

    def _where(self) -> str:
        r = self.row
        return f"{r['scenario']} {r['offset']}, stop {r['mode']}"

    def assert_no_hang(self) -> None:
        """StopHung when a step overran its deadline (`hung`), StopFailed when one raised (`failed`)."""
        r = self.row
        if r["status"] == "hung":
            raise StopHung(f"the trial hung in {r.get('failed_step') or 'a step'} ({self._where()}): {r['reason']}")
        if r["status"] == "failed":
            raise StopFailed(f"the trial failed in {r.get('failed_step') or 'a step'} ({self._where()}): "
                             f"{r['reason']}")

    def repeated_effects(self) -> list[str]:
        """The effects the resume committed that had been committed (and not undone) before it, each named once:
        `1 email committed again by the resume (email_3: to=...)`; the row's resume_duplicate_effects counts them."""
        from harness.results.metrics import _live_by_phase

        tr = self.trial
        if tr.resume_started is None:
            return []
        before, _ = _live_by_phase(tr)
        seen, out = set(), []
        for eid, c in tr.committed.items():
            received = tr.received.get(eid, c)
            if eid in tr.compensated or not tr.in_resume(received) or c["logical"] not in before:
                continue
            if c["logical"] not in seen:
                seen.add(c["logical"])
                out.append(f"1 {c['kind']} committed again by the resume ({eid}{_args(received)})")
        return out

    def assert_resume_clean(self) -> None:
        """ResumeRepeated naming each effect of before the resume that the resume committed again."""
        found = self.repeated_effects()
        if found:
            raise ResumeRepeated(f"resume repeated what was done before the stop ({self._where()}): "
                                 + "; ".join(found))

    def assert_no_processes_left(self) -> None:
        """ProcessesLeft naming each process of the run alive after close (the harness reaped them)."""
        tr = self.trial
        known = {p["pid"]: p for p in [*tr.audit(AuditPhase.AFTER_CLOSE).get("children", []), *self._reaped()]}
        left = [f"pid {pid} {known.get(pid, {}).get('cmdline', '?')}" for pid in sorted(tr.orphans)]
        if left:
            raise ProcessesLeft(f"{len(left)} process(es) of the run still alive after close ({self._where()}): "
                                + "; ".join(left))

    def assert_nothing_leaked(self) -> None:
        """Stricter than assert_stopped: every effect that landed after the stop was pressed, also one that was
        already on its way, was undone (effects_leaked 0)."""
        if self.row.get("effects_leaked"):
            raise StopLied(f"{self.row['effects_leaked']} effect(s) landed after the stop and were never undone")

    def assert_stopped(self, max_tokens: int = MAX_TOKENS, max_billed_tokens: int | None = None) -> None:
        """StopLied naming everything the world saw after the stop that the button should have prevented:
        tokens the agent read beyond `max_tokens` (a few may be on the wire before the client closes the stream),
        model requests, effects sent after the stop, effects in flight that landed after the button said stopped
        and stayed, processes, threads, or a trial that hung or failed. Tokens billed for a non-streamed request
        sent before the stop count only with `max_billed_tokens` (the stop cannot save them; streaming can)."""
        found = self.problems(max_tokens, max_billed_tokens)
        if found:
            raise StopLied(f"stop lied ({self.row['scenario']} {self.row['offset']}, stop {self.row['mode']}): "
                           + "; ".join(found))
