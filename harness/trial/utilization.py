"""How busy the machine was while a run went on, and why it was not busier: a line a second in
`<out>/schedule/<adapter>.jsonl` (not published: `benchmarks/idle_share.py` reads it).

Each line: the wall time, the machine's busy share over the last second (all cores, from /proc/stat: anything
running counts, ours or not), the trials at work, observing and queued, and what kept the runner from starting
one more when the queue was not empty (`held`: why, by the last decision of the second).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.results.rows import raw_file

#: why the runner started nothing more: one of these (None: it started what it could)
HELD = {
    "limit": "the trials at work (or in flight) are at the concurrency limit",
    "timed": "only time-offset trials are queued, and one is before its stop",
    "tail": "the queue is empty: the run's last trials are finishing",
}


def schedule_file(out_dir: Path, adapter: str) -> Path:
    """`<out>/schedule/<adapter>.jsonl`, named as the adapter's raw rows are."""
    return out_dir / "schedule" / raw_file(out_dir, adapter).name


def _cpu_ticks() -> tuple[int, int]:
    """(all, idle) jiffies of every core since boot; (0, 0) where /proc/stat is not there."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return sum(values), values[3] + values[4]  # idle + iowait


class Utilization:
    """Called by the runner's loop; writes at most a line a second (opening the file each time: subjects are forked
    from the runner, and must not inherit a file of it)."""

    def __init__(self, path: Path, every_s: float = 1.0):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.every_s = every_s
        self.last = time.monotonic()
        self.ticks = _cpu_ticks()

    def sample(self, at_work: int, observing: int, queued: int, held: str | None) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        ticks = _cpu_ticks()
        total, idle = ticks[0] - self.ticks[0], ticks[1] - self.ticks[1]
        self.last, self.ticks = now, ticks
        line = {"t": round(time.time(), 3), "busy": round(1 - idle / total, 3) if total else None,
                "at_work": at_work, "observing": observing, "queued": queued, "held": held}
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")
