"""The watchdog pipe between a subject and its parent: the subject says which step it is in and by
when that step must end; the parent ends a subject whose step overran.

One JSON object per line: {"step": name, "deadline_ns": t}, {"step": "done"}, {"crash": description}, or
{"stop_called": t, "data": {...}}: the moment the button is pressed, written (a plain blocking write, no
event loop needed) before the adapter's stop() runs, so that a stop() that blocks the subject's loop
still leaves the parent knowing when the stop was pressed, and every "after stop" count of a hung row
exists.

After "done" the subject waits, alive, for the parent: the parent freezes it, ends every descendant
(the subject is their subreaper, so a process that escaped by double-forking is still one of them),
and only then ends the subject.
"""

from __future__ import annotations

import json
import os
import time

DONE = "done"
LAUNCH_DEADLINE_S = 60.0  # importing and setting up, at most


class WatchdogPipe:
    """The subject's end."""

    def __init__(self, fd: int, grace_s: float):
        self.fd = fd
        self.grace_s = grace_s

    def _send(self, msg: dict) -> None:
        os.write(self.fd, (json.dumps(msg) + "\n").encode())

    def step(self, name: str, seconds: float) -> None:
        self._send({"step": name, "deadline_ns": time.monotonic_ns() + int((seconds + self.grace_s) * 1e9)})

    def done(self) -> None:
        self._send({"step": DONE})

    def stop_called(self, t: int, data: dict) -> None:
        self._send({"stop_called": t, "data": data})

    def crash(self, description: str) -> None:
        self._send({"crash": description})


class WatchdogReader:
    """The parent's end: non-blocking; `overran()` says when the subject's current step is past its deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        os.set_blocking(fd, False)
        self._buf = b""
        self.last_step = "launch"
        self.deadline_ns = time.monotonic_ns() + int(LAUNCH_DEADLINE_S * 1e9)
        self.crash: str | None = None
        self.stop_called: dict | None = None  # {"t": ..., "data": ...} once the subject pressed stop

    def read(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                self._buf += chunk
        except BlockingIOError:
            pass
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            msg = json.loads(line)
            if "crash" in msg:
                self.crash = msg["crash"]
            elif "stop_called" in msg:
                self.stop_called = {"t": msg["stop_called"], "data": msg.get("data") or {}}
            elif "step" in msg:
                self.last_step = msg["step"]
                self.deadline_ns = msg.get("deadline_ns", self.deadline_ns)

    @property
    def done(self) -> bool:
        return self.last_step == DONE

    def overran(self) -> bool:
        return self.last_step != DONE and time.monotonic_ns() > self.deadline_ns

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
