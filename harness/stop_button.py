"""The trial's stop button: the instant `stop_called` is stamped, ordered against the tool sends that ask.

"In flight at the stop" means a call's send time (SENT_HEADER) is before `stop_called`. A send and the
press are stamped on the same clock, but by different threads: a tool call that a worker thread was
about to send when stop was pressed could be stamped a moment after it, although the agent checked for
the stop a moment before. `StopButton` takes both stamps under one lock, so the order is exact: a
sender that asks `send_time()` either gets a time before the press or is told the stop was pressed
(`StopPressed`), never a time after it.

The harness presses the button for every trial (`press()` is where `stop_called`'s time comes from) and
releases it when resume starts. Only an agent that chooses to check it is affected: the reference adapter
passes it to its tools (`Toolbox.call(..., unless_pressed=button)`) because not sending what has not left
is what a correct stop does. Framework adapters never pass it: their tools send whatever the framework
asks, whenever it asks.
"""

from __future__ import annotations

import threading
import time


class StopPressed(RuntimeError):
    """The call had not left when stop was pressed, and its caller asked not to send it then."""


class StopButton:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pressed_ns: int | None = None

    def press(self) -> int:
        """Press it: the moment, on time.monotonic_ns() (the ledger's clock), is `stop_called`."""
        with self._lock:
            self._pressed_ns = time.monotonic_ns()
            return self._pressed_ns

    def release(self) -> None:
        """Resume starts: sends are new work of the resumed run, and allowed again."""
        with self._lock:
            self._pressed_ns = None

    @property
    def pressed(self) -> bool:
        return self._pressed_ns is not None

    def send_time(self) -> int:
        """The send time for a request about to leave, taken before any press; StopPressed after one."""
        with self._lock:
            if self._pressed_ns is not None:
                raise StopPressed("stop was pressed before this call left")
            return time.monotonic_ns()
