"""The trial's stop button: the instant `stop_called` is stamped, ordered against the tool sends that ask.

"In flight at the stop" means a call's send time (SENT_HEADER) is before `stop_called`. A send and the
press are stamped on the same clock, but by different threads: a tool call that a worker thread was
about to send when stop was pressed could be stamped a moment after it, although the agent checked for
the stop a moment before. `StopButton` takes both stamps under one lock, so the order is exact: a
sender that asks `send_time()` either gets a time before the press or is told the stop was pressed
(`StopPressed`), never a time after it.

The same holds across processes. An MCP tool call is sent by the MCP server, a process of its own: a
call the agent wrote to the server just before the press could be stamped by the server just after it.
A button that is `share()`d keeps its state in its file under an advisory lock (flock), and a server
started with STOP_BUTTON_ENV naming that file (`StopButton.of_file`) asks it before each send, exactly as a
thread does.

The harness presses the button for every trial (`press()` is where `stop_called`'s time comes from) and
releases it when resume starts. Only an agent that chooses to check it is affected: the reference adapter
passes it to its tools (`Toolbox.call(..., unless_pressed=button)`, and `ctx.mcp.asking(button)` for its
MCP server) because not sending what has not left is what a correct stop does. Framework adapters never
pass it: their tools send whatever the framework asks, whenever it asks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

#: the button's file in the trial folder (the harness gives every trial's button one)
STOP_BUTTON_FILE = "stop-button"
#: names the button's file for an MCP server whose sends should ask it (harness/tools/mcp_server.py)
STOP_BUTTON_ENV = "STOPBENCH_STOP_BUTTON"
#: what an MCP server answers for a call it did not send because the button was pressed
NOT_SENT = "stopbench: not sent, stop was pressed before this call left"


class StopPressed(RuntimeError):
    """The call had not left when stop was pressed, and its caller asked not to send it then."""


class StopButton:
    """`path`: where the button is kept once `share()`d, for another process to ask (see the module's
    docstring). Until then it lives in memory alone, so a trial whose agent shares it with nobody (every
    framework adapter) presses it exactly as before: no file on the stop path."""

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._pressed_ns: int | None = None
        self.path = path
        self.shared = False

    @classmethod
    def of_file(cls, path: Path) -> StopButton:
        """The button another process shared at `path` (the MCP server's side)."""
        button = cls(path)
        button.shared = True
        return button

    def share(self) -> Path:
        """From now on keep the state in the file too, so other processes can ask it; returns the path."""
        if self.path is None:
            raise ValueError("this stop button has no file: another process cannot ask it")
        with self._lock:
            self.shared = True
        with self._held() as fd:
            self._write(fd, str(self._pressed_ns).encode() if self._pressed_ns is not None else b"")
        return self.path

    @contextlib.contextmanager
    def _held(self) -> Iterator[int | None]:
        """Both locks (this process's threads, other processes), yielding the file's descriptor or None."""
        with self._lock:
            if self.path is None or not self.shared:
                yield None
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield fd
            finally:
                os.close(fd)  # releases the flock

    def _read(self, fd: int | None) -> int | None:
        if fd is None:
            return self._pressed_ns
        text = os.pread(fd, 32, 0).strip()
        return int(text) if text else None

    @staticmethod
    def _write(fd: int | None, text: bytes) -> None:
        if fd is not None:
            os.ftruncate(fd, 0)
            os.pwrite(fd, text, 0)

    def press(self) -> int:
        """Press it: the moment, on time.monotonic_ns() (the ledger's clock), is `stop_called`."""
        with self._held() as fd:
            self._pressed_ns = time.monotonic_ns()
            self._write(fd, str(self._pressed_ns).encode())
            return self._pressed_ns

    def release(self) -> None:
        """Resume starts: sends are new work of the resumed run, and allowed again."""
        with self._held() as fd:
            self._pressed_ns = None
            self._write(fd, b"")

    @property
    def pressed(self) -> bool:
        with self._held() as fd:
            return self._read(fd) is not None

    def send_time(self) -> int:
        """The send time for a request about to leave, taken before any press; StopPressed after one."""
        with self._held() as fd:
            if self._read(fd) is not None:
                raise StopPressed("stop was pressed before this call left")
            return time.monotonic_ns()
