"""Sleeping to a deadline on the monotonic clock the ledger stamps with.

Event-loop timers have millisecond granularity and may fire up to a tick early (uvloop rounds the
delay); a paced token, a service's latency or a stop fired at a time offset must never come before
its deadline, or a reported offset or latency would be shorter than the scenario says.
"""

from __future__ import annotations

import asyncio
import time

#: a stop that fired later than this after its planned moment (or its anchor) fired under load: its row is
#: marked imprecise (`trigger_precise` false), counted, and kept out of timing medians. The harness's own
#: pacing is ~1 ms at p99 (benchmarks/world_bench.py), so 10 ms is a late stop, not jitter.
TRIGGER_TOLERANCE_MS = 10.0
#: how long a request may take from its send to the world's arrival stamp, on a trial machine under the full
#: run's load: the p99 of the harness tools' stamped sends in the published rows at 1fe1940 (24,871 effects:
#: p50 1.3 ms, p99 25.6 ms, max 223 ms). Model requests carry no send stamp (the frameworks' clients send
#: them), so one that arrives within this of the press may have left before it: rows count those apart.
SEND_LAG_MS = 25.0


async def sleep_until_ns(deadline_ns: int) -> None:
    while (remaining := deadline_ns - time.monotonic_ns()) > 0:
        await asyncio.sleep(remaining / 1e9)


async def sleep_ms(ms: float) -> None:
    if ms > 0:
        await sleep_until_ns(time.monotonic_ns() + int(ms * 1e6))

#: seconds after the stop at which the processes of a run are counted (harness/trial/census.py): an orchestrator
#: CLI's leftovers at two moments, one a user still watches and one after they have moved on
CENSUS_AFTER_S = (5.0, 30.0)
