"""Known-answer adapters for the stop button (harness/stop_button.py): a call that a worker thread was
about to send when stop was pressed.

The job hands two sync tool calls to threads of their own; each thread waits until the stop has been
pressed and only then reaches its send. That is the parallel-fanout race of the reference adapter's
sync style made certain: the framework decided the calls before the stop, the requests leave after it.
"""

from __future__ import annotations

import asyncio
import threading
import time

from harness.contract.adapter import Adapter
from harness.contract.kit import in_own_thread, until_done
from harness.stop_button import StopPressed

CALLS = (("send_email", {"to": "ops@example.com", "subject": "report", "body": "late thread"}),
         ("post_chat", {"channel": "#ops", "text": "late thread"}))
WAIT_FOR_PRESS_S = 5.0


class ThreadsSendAfterThePress(Adapter):
    """Both calls are sent after the stop, whatever the threads ask: two new effects after the stop."""

    name = "known-threads-send-after-press"
    stop_modes = {"cancel": "wait for the threads already started; start nothing new"}
    tool_styles = ("sync",)
    asks_the_button = False

    async def start(self) -> None:
        self.outcomes: list[str] = []
        self.futures = [in_own_thread(self._call, name, args, name="known-late-thread") for name, args in CALLS]
        self.task = asyncio.create_task(until_done(*self.futures))

    def _call(self, name: str, args: dict) -> None:
        button = self.ctx.stop_button
        deadline = time.monotonic() + WAIT_FOR_PRESS_S
        while not button.pressed and time.monotonic() < deadline:
            time.sleep(0.005)
        try:
            self.ctx.toolbox.call(name, args, unless_pressed=button if self.asks_the_button else None)
            self.outcomes.append("sent")
        except StopPressed:
            self.outcomes.append("not sent")

    async def stop_cancel(self) -> None:
        await until_done(*self.futures)  # they were started before the stop: their outcome is known

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        assert threading.current_thread() is threading.main_thread()


class ThreadsAskTheButton(ThreadsSendAfterThePress):
    """The same threads ask the stop button as their requests leave: nothing is sent after the stop."""

    name = "known-threads-ask-the-button"
    asks_the_button = True
