"""Known-answer adapters for the stop button (harness/stop_button.py): a call that a worker thread, or the
MCP server, was about to send when stop was pressed.

The job hands two sync tool calls to threads of their own; each thread waits until the stop has been
pressed and only then reaches its send. That is the parallel-fanout race of the reference adapter's
sync style made certain: the framework decided the calls before the stop, the requests leave after it.
The MCP pair does the same across processes: the call reaches the trial's MCP server only once the stop
is pressed, as a call written to the server just before the press and sent by it just after would (the
reference's mcp style at `parallel_fanout on:effect_received:calendar`, 1 of 3 trials at fdf7d4f).
"""

from __future__ import annotations

import asyncio
import json
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


class McpCallSentAfterThePress(Adapter):
    """One MCP tool call, written to the trial's MCP server once the stop is pressed: the server sends it (one
    new effect after the stop). The client is the MCP wire protocol on the server's stdio, one request."""

    name = "known-mcp-call-after-press"
    stop_modes = {"cancel": "wait for the call already started"}
    tool_styles = ("mcp",)
    asks_the_button = False

    async def start(self) -> None:
        server = self.ctx.mcp.asking(self.ctx.stop_button) if self.asks_the_button else self.ctx.mcp
        self.server = await asyncio.create_subprocess_exec(
            server.command, *server.args, env=server.env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        self.answer: dict = {}
        self.task = asyncio.create_task(self._call(*CALLS[0]))

    async def _call(self, name: str, args: dict) -> None:
        deadline = time.monotonic() + WAIT_FOR_PRESS_S
        while not self.ctx.stop_button.pressed and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps(request).encode() + b"\n")
        await self.server.stdin.drain()
        self.answer = json.loads(await self.server.stdout.readline())

    async def stop_cancel(self) -> None:
        await until_done(self.task)  # started before the stop: its outcome is known

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        assert self.server.stdin is not None
        self.server.stdin.close()  # end of stdin: the server exits
        await self.server.wait()


class McpCallAsksTheButton(McpCallSentAfterThePress):
    """The same call, to a server started asking the trial's stop button (`ctx.mcp.asking(button)`): answered
    NOT_SENT, nothing is sent after the stop."""

    name = "known-mcp-call-asks-the-button"
    asks_the_button = True
