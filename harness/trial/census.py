"""Which processes of a run are alive at fixed moments after the stop (harness/clock.py `CENSUS_AFTER_S`).

An orchestrator CLI (a coding agent run as its users run it) leaves MCP servers, shell children and a native
binary behind it; what a user sees a few seconds after Ctrl-C and what is still running half a minute later are
two different findings. The census runs beside the observation after the stop (it never shortens it: the settle
step's floor covers its last moment) and counts the subject's descendants, which the subject, a child subreaper,
holds whatever they did to escape: each with its command line, resident memory and the CPU it had used.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import psutil

from harness.clock import CENSUS_AFTER_S, sleep_until_ns
from harness.trial.audit import descendant_pids


def alive() -> list[dict[str, Any]]:
    """The subject's live descendants now, each with what it costs."""
    out = []
    for pid in descendant_pids():
        try:
            p = psutil.Process(pid)
            cpu = p.cpu_times()
            out.append({"pid": pid, "cmdline": " ".join(p.cmdline()[:4])[:200], "rss": p.memory_info().rss,
                        "cpu_s": round(cpu.user + cpu.system, 4)})
        except psutil.Error:  # gone meanwhile
            continue
    return out


async def census(since_ns: int, post: Callable[[float, int, list[dict[str, Any]]], Awaitable[None]]) -> None:
    """At each of CENSUS_AFTER_S after `since_ns` (the stop), count what is alive and `post(after_s, t, found)`."""
    for after_s in CENSUS_AFTER_S:
        await sleep_until_ns(since_ns + int(after_s * 1e9))
        found = alive()
        await post(after_s, time.monotonic_ns(), found)


def census_floor_ms() -> float:
    """How long the observation after the stop lasts at least, so that the census's last count falls inside it."""
    return max(CENSUS_AFTER_S) * 1000 + 200
