"""How many trials run side by side: fixed (`--jobs N`) or chosen as the run goes (`--jobs auto`).

Trials mostly wait (the scenario's pacing and latencies), so more trials than cores keep the cores busy;
too many and the harness's own timing suffers. `auto` adds a trial while the CPU has room and the stops
fire on time, and halves the number when a stop fires late: event-anchored counts do not depend on load
(the world freezes at the anchor), but time offsets and every timing do.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Any

import psutil

from harness.clock import TRIGGER_TOLERANCE_MS
from harness.results.selection import is_anchored

CPU_ROOM = 85.0  # add a trial while the machine's CPU is below this percentage
#: trials at work at most, per CPU (a trial mostly waits for the scenario's pacing: ~5 s of wall for ~0.3 CPU-s)
AT_WORK_PER_CPU = 6
#: trials that only observe, beside the limit, per CPU (each is a forked subject: memory, not CPU)
OBSERVING_PER_CPU = 16
#: `auto` halves the limit when more than LATE_SHARE of the last LATE_WINDOW event-anchored stops were late: a
#: habit of the machine, not one trial (a framework that blocks its own loop makes its press late too)
LATE_WINDOW = 20
LATE_SHARE = 0.1


@dataclass(frozen=True)
class Slot:
    """What the runner knows of a running trial, for deciding what starts next."""

    observing: bool  # only observing (after the stop): uses no CPU
    timed_before_stop: bool  # a time-offset trial whose stop has not fired yet


class Concurrency:
    def __init__(self, jobs: int | None):
        """`jobs` None: auto."""
        cpus = os.cpu_count() or 1
        self.auto = jobs is None
        self.limit = jobs if jobs is not None else cpus
        self.ceiling = jobs if jobs is not None else AT_WORK_PER_CPU * cpus
        self.late = 0
        self.recent: deque[bool] = deque(maxlen=LATE_WINDOW)  # late or not, the last event-anchored stops
        self.observing_room = OBSERVING_PER_CPU * cpus
        if self.auto:
            psutil.cpu_percent(None)  # starts the CPU sampling window

    def admits(self, observing: list[bool]) -> bool:
        """Room for one more trial beside these (True per trial that is only observing)? Trials that only
        observe (the floor after a stop, waiting for quiet) use no CPU: they do not count against the
        limit, up to OBSERVING_PER_CPU per CPU (and 4 per allowed active trial) more, so a longer
        observation does not lengthen the run. (A framework that works on after the stop does so while
        "observed": if that loads the CPU, stops fire late, and `auto` halves the limit and so this room.)"""
        active = observing.count(False)
        room = min(self.observing_room, 4 * self.limit)
        return active < self.limit and len(observing) < self.limit + room

    def pick(self, timed: list[bool], running: list[Slot]) -> int | None:
        """Which queued trial to start now (its index; `timed`: its stop fires at a time offset), or None.

        A stop at a time offset must fire on a run the others do not slow (an event anchor freezes the world until
        the stop, a time offset cannot): every subject but a time-offset one before its stop runs at the lowest CPU
        priority (harness/trial/priority.py), and one time-offset trial at a time is before its stop: those go one
        after the other, so one starts as soon as it may (they would otherwise be left for the end of the run, in
        a line), and the others fill the machine meanwhile. Rows do not depend on the order trials start in."""
        if not self.admits([r.observing for r in running]):
            return None
        if not any(r.timed_before_stop for r in running) and any(timed):
            return timed.index(True)
        return next((i for i, t in enumerate(timed) if not t), None)

    def observe(self, row: dict[str, Any]) -> None:
        """After each finished trial. Late event-anchored stops are the harness's own lateness (the world's push
        to the subject's loop) when they are a habit: `auto` halves the limit when more than LATE_SHARE of the last
        LATE_WINDOW were late. A time-offset stop is late also when the adapter's start() took longer than the
        offset, which fewer trials would not change."""
        delay = row.get("trigger_delay_ms")
        late = delay is not None and delay > TRIGGER_TOLERANCE_MS
        self.late += late
        if not self.auto:
            return
        if is_anchored(row, "event") and delay is not None:
            self.recent.append(late)
        if sum(self.recent) > LATE_SHARE * LATE_WINDOW:
            self.limit = max(1, self.limit // 2)
            self.recent.clear()
        elif not late and psutil.cpu_percent(None) < CPU_ROOM:
            self.limit = min(self.ceiling, self.limit + 1)

    def __str__(self) -> str:
        return f"auto, now {self.limit}" if self.auto else str(self.limit)
