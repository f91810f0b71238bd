"""The trial's marks: stamped when they happen, sent to the world's ledger in batches.

A mark carries its own time, so batching changes nothing in what it says; the subject flushes before
any step that may overrun (so a hung row still has every mark up to the hang) and at once for
`stop_called` (the world holds an anchored event until it sees it).
"""

from __future__ import annotations

import time
from typing import Any

from harness.tools.loopback_http import LoopbackClient


class MarkBuffer:
    def __init__(self, http: LoopbackClient, run_url: str):
        self.http = http
        self.url = f"{run_url}/marks"
        self.pending: list[dict[str, Any]] = []

    def mark(self, name: str, t: int | None = None, **data: Any) -> None:
        """Stamp now (or at t); the mark reaches the world with the next flush."""
        self.pending.append({"name": name, "t": t if t is not None else time.monotonic_ns(), "data": data or None})

    async def flush(self) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            r = await self.http.post(self.url, json=batch)
            r.raise_for_status()
