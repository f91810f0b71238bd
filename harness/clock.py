"""Sleeping to a deadline on the monotonic clock the ledger stamps with.

Event-loop timers have millisecond granularity and may fire up to a tick early (uvloop rounds the
delay); a paced token, a service's latency or a stop fired at a time offset must never come before
its deadline, or a reported offset or latency would be shorter than the scenario says.
"""

from __future__ import annotations

import asyncio
import time


async def sleep_until_ns(deadline_ns: int) -> None:
    while (remaining := deadline_ns - time.monotonic_ns()) > 0:
        await asyncio.sleep(remaining / 1e9)


async def sleep_ms(ms: float) -> None:
    if ms > 0:
        await sleep_until_ns(time.monotonic_ns() + int(ms * 1e6))
