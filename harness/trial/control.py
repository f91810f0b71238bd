"""When the stop is pressed: at a time after the run started, or when the world pushes `stop` down
the control stream the moment the anchored event happens."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from harness.clock import sleep_until_ns
from harness.scenario import Offset
from harness.tools.loopback_http import stream_lines


class ControlStream:
    """The trial's control stream, opened before the run starts (so no anchor can fire unheard)."""

    def __init__(self, run_url: str):
        self.url = f"{run_url}/control"
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.anchor: dict[str, Any] = {}  # anchor_t (the world's stamp) and received_t

    async def listen(self) -> None:
        async for line in stream_lines(self.url):
            if line.startswith(": open"):
                self.ready.set()
            elif line.startswith("data:"):
                msg = json.loads(line[5:])
                self.anchor["anchor_t"] = msg.get("t")
                self.anchor["received_t"] = time.monotonic_ns()
                self.stop.set()
                return


async def pressed(offset: Offset, run_started_ns: int, control: ControlStream | None) -> None:
    """Returns when the stop is due: never before its time (harness.clock sleeps again for what is left)."""
    if offset.is_event:
        assert control is not None, "an event offset needs the control stream"
        await control.stop.wait()
    else:
        await sleep_until_ns(run_started_ns + int(offset.at_ms * 1e6))
