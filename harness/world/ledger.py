"""The ledger: every event the world sees, stamped with the one clock, per run.

Everything stopbench reports is computed from these events and the trial's marks. The run also
owns the event anchor: when the anchored event happens, the world pushes `stop` to the trial.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from harness.billing import DEFAULT_PROFILE, BillingProfile
from harness.scenario import Offset, Scenario, resolve_scenario, scenario_path
from harness.vocabulary import ACTIVITY_EVENTS, Event, Mark

MAX_UNATTRIBUTED = 1000  # requests that named no known run, kept for the run's summary
HOLD_TIMEOUT_S = 5.0  # an effect held for the stop waits at most this long for stop_called


@dataclass
class Effect:
    effect_id: str
    kind: str
    logical: str
    idempotency_key: str | None
    committed: asyncio.Future
    received_ns: int
    committed_ns: int | None = None
    status: str = "pending"


@dataclass
class Run:
    run_id: str
    scenario: Scenario
    seed: int
    anchor: Offset | None
    created_ns: int
    billing: BillingProfile = DEFAULT_PROFILE  # what the provider bills after a streamed answer's client left
    events: list[dict[str, Any]] = field(default_factory=list)
    last_activity_ns: int = 0
    open_requests: int = 0
    #: the longest the run was idle (nothing in progress, nothing happening) between two of its actions before
    #: the stop: how slowly this framework steps; a quiet window shorter than that cannot tell "done" from
    #: "between two steps" (`quiet` stretches its window to cover it)
    longest_pause_ns: int = 0
    anchor_fired: bool = False
    #: the stop is anchored at a fault that was sent: every model request that arrives before stop_called is
    #: held (the retry cannot race the stop)
    model_frozen: bool = False
    #: turn -> how many of its scripted faults were served (a faulted request does not consume the turn)
    faults_served: dict[int, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    effects: dict[str, Effect] = field(default_factory=dict)
    by_key: dict[tuple[str, str], Effect] = field(default_factory=dict)  # (kind, Idempotency-Key)
    control_queues: list[asyncio.Queue] = field(default_factory=list)
    stop_called: asyncio.Event = field(default_factory=asyncio.Event)
    #: what the anchor's hold waits for: stop_called, or, for an adapter in another process that says when it
    #: handled the stop (`hold_until_handled` on stop_called), its stop_handled
    stop_released: asyncio.Event = field(default_factory=asyncio.Event)
    stop_reached_app: bool = False
    responses: dict[str, int] = field(default_factory=dict)  # response id -> tool results it answered
    #: response id -> the function call ids it asked for, once the response completed: a request continuing
    #: from it (previous_response_id) must answer each, as the real Responses API requires
    response_calls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def next_id(self) -> int:
        return next(self._ids)

    def request_opened(self) -> None:
        """A request of the run is in progress (the run is not quiet until it is answered)."""
        self._pause_ends(time.monotonic_ns())
        self.open_requests += 1

    def request_closed(self) -> None:
        self.open_requests -= 1

    def _pause_ends(self, t: int) -> None:
        if self.open_requests == 0 and self.last_activity_ns and not self.stop_called.is_set():
            self.longest_pause_ns = max(self.longest_pause_ns, t - self.last_activity_ns)

    def record(self, event: str, t: int | None = None, **data: Any) -> dict[str, Any]:
        t = time.monotonic_ns() if t is None else t
        entry = {"t": t, "event": event, **data}
        self.events.append(entry)
        if event in ACTIVITY_EVENTS:
            if self.open_requests == 0:  # not per streamed token: a token comes with its request open
                self._pause_ends(t)
            self.last_activity_ns = max(self.last_activity_ns, t)
        if event == Event.MARK:
            self._on_mark(data.get("name"), data.get("data") or {})
        return entry

    def _on_mark(self, name: Any, data: dict[str, Any]) -> None:
        """Release the world's hold once the stop was pressed and has reached the app."""
        if name == Mark.STOP_CALLED:
            self.stop_called.set()
            if not data.get("hold_until_handled") or self.stop_reached_app:
                self.stop_released.set()
        elif name in (Mark.STOP_HANDLED, Mark.STOP_RETURNED):
            # handled by the adapter's process; or the button returned and no stamp came (a process that
            # declared one and never sent it): the stop has reached the app either way
            self.stop_reached_app = True
            if self.stop_called.is_set():
                self.stop_released.set()

    def count(self, event: str, kind: str | None = None) -> bool:
        """Count an anchorable event; fire the stop anchor when it is the N-th one. True if it fired now."""
        key = f"{event}:{kind}" if kind else event
        n = self.counters.get(key, 0) + 1
        self.counters[key] = n
        anchor = self.anchor
        if anchor is not None and not self.anchor_fired and anchor.matches(event, kind, n):
            self.fire_anchor()
            return True
        return False

    async def hold_for_stop(self, what: str) -> None:
        """Freeze this part of the world at the anchor until the trial has pressed stop (bounded).

        The agent cannot race the stop: whatever it does next, it does after stop_called (after the adapter's own
        process handled it, for one that says when: stop_handled). Event anchors are deterministic because of
        this, not by luck of scheduling.
        """
        if self.stop_released.is_set():
            return
        try:
            await asyncio.wait_for(self.stop_released.wait(), HOLD_TIMEOUT_S)
            self.record(Event.ANCHOR_RELEASED, what=what)
        except TimeoutError:
            self.record(Event.ANCHOR_RELEASED, what=what, timeout=True)

    def fire_anchor(self) -> None:
        self.anchor_fired = True
        entry = self.record(Event.ANCHOR_FIRED, anchor=self.anchor.text if self.anchor else None)
        for q in self.control_queues:
            q.put_nowait({"event": "stop", "anchor": entry["anchor"], "t": entry["t"]})



class World:
    """All runs of one world process, and what arrived for no run."""

    def __init__(self, scenarios_dir):
        self.scenarios_dir = scenarios_dir
        self.runs: dict[str, Run] = {}
        self.unattributed: list[dict[str, Any]] = []
        self._scenarios: dict[str, tuple[tuple[int, int], Scenario]] = {}
        self._seq = itertools.count(1)
        # unique across worlds: run ids mark processes (for reaping), and two worlds may run at once
        self._prefix = secrets.token_hex(3)

    def scenario(self, spec: str | dict[str, Any]) -> Scenario:
        """A scenario by name (parsed once per version of its file) or inline."""
        if isinstance(spec, dict):
            return resolve_scenario(spec, self.scenarios_dir)
        path = scenario_path(spec, self.scenarios_dir)  # a ScenarioError for anything but a plain name
        try:
            st = path.stat()
            version = (st.st_mtime_ns, st.st_size)
        except OSError:
            version = None
        cached = self._scenarios.get(spec)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        scenario = resolve_scenario(spec, self.scenarios_dir)  # errors name the file and field
        if version is not None:
            self._scenarios[spec] = (version, scenario)
        return scenario

    def new_run_id(self) -> str:
        return f"r{self._prefix}-{next(self._seq):05d}"

    def record_unattributed(self, method: str, path: str, reason: str) -> None:
        """Kept bounded: the newest MAX_UNATTRIBUTED, each path cut to 200 characters."""
        self.unattributed.append({"t": time.monotonic_ns(), "method": method[:16], "path": path[:200],
                                  "reason": reason})
        if len(self.unattributed) > MAX_UNATTRIBUTED:
            del self.unattributed[:len(self.unattributed) - MAX_UNATTRIBUTED]
