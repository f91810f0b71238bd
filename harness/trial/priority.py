"""Who gets the CPU first: a subject whose stop is at a time offset, until its stop is pressed.

A stop at a time offset lands wherever the run has got to, so that run must not be slowed by the trials beside it
(an event anchor freezes the world until its stop: its counts do not depend on load). Every other subject runs at
the lowest CPU priority, `nice` 19: an event-anchored one from its start, a time-offset one from its stop on, with
every thread and every process it has started then. The kernel gives a runnable nice-0 task ~98% of a contended
core against nice-19 ones, so a time-offset run before its stop has the CPU it asks for whatever runs beside it,
and the others fill what it leaves: time-offset trials need not wait for an empty machine. The runner and the world
keep their priority (they serve every trial's stream and anchors). Raising one's own niceness needs no privilege.
"""

from __future__ import annotations

import contextlib
import os

from harness.trial.audit import descendant_pids

#: the niceness of every subject that is not a time-offset run before its stop
BACKGROUND_NICE = 19


def to_background(pid: int | None = None) -> None:
    """Every thread of `pid` (default: this process) and of its descendants to BACKGROUND_NICE (on Linux a
    thread has its own niceness, so each is set; one that ends meanwhile is skipped)."""
    root = pid or os.getpid()
    for proc in (root, *descendant_pids(root)):
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{proc}/task")]
        except OSError:  # gone, or not Linux: the process alone
            tids = [proc]
        for tid in tids:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, BACKGROUND_NICE)
