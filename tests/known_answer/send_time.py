"""A known-answer adapter for issue #11 case 7: a call sent before the stop that reaches the world after it.

Kept apart from tests/known_answer/adapters.py (the other planted behaviours) because it brings its own
piece of network: a slow link between the agent and the world.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from harness.contract.adapter import Adapter
from harness.tools.toolbox import Toolbox

EMAIL = {"to": "ops@example.com", "subject": "report", "body": "sent before the stop"}
#: how long the link holds each chunk the agent sends; far past a stop at 100 ms, far within the wait deadline
LINK_DELAY_S = 0.3


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, delay_s: float) -> None:
    """Copy src to dst, each chunk `delay_s` after it was read; at the end, close dst (both ways)."""
    try:
        while data := await src.read(65536):
            await asyncio.sleep(delay_s)
            dst.write(data)
            await dst.drain()
    finally:
        dst.close()


class SlowLink:
    """A TCP relay on loopback to the world whose agent-to-world direction holds every chunk LINK_DELAY_S.

    The world stamps an effect when its request has fully arrived, so a request that left at once
    arrives LINK_DELAY_S later: what a congested network (or a busy proxy) does to one of several
    parallel calls. Answers come back without delay.
    """

    def __init__(self, host: str, port: int, delay_s: float):
        self.host, self.port, self.delay_s = host, port, delay_s
        self.server: asyncio.Server | None = None

    async def open(self) -> int:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        await asyncio.gather(_pipe(reader, up_writer, self.delay_s), _pipe(up_reader, writer, 0),
                             return_exceptions=True)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


class SentBeforeStopArrivesAfter(Adapter):
    """The job calls send_email at once, through the trial's own toolbox (its transport, its send stamp)
    pointed at a SlowLink, so the request leaves at ~0 ms and reaches the world ~300 ms later. stop()
    lets that call finish and starts nothing new: with a stop at 100 ms, the one effect after the stop
    is in flight, not new work (today's receipt-time rule calls it new).
    """

    name = "known-sent-before-stop"
    stop_modes = {"cancel": "let the call already sent finish; start nothing new"}
    tool_styles = ("async",)

    async def start(self) -> None:
        world = urlsplit(self.ctx.services_base_url)
        self.link = SlowLink(world.hostname or "127.0.0.1", world.port or 80, LINK_DELAY_S)
        port = await self.link.open()
        own = self.ctx.toolbox
        self.toolbox = Toolbox(f"http://127.0.0.1:{port}{world.path}", key_policy=own.key_policy,
                               on_result=own.on_result, timeout_s=own.timeout_s, on_attempt=own.on_attempt,
                               apost=own.apost)
        self.stopped = asyncio.Event()
        self.task = asyncio.create_task(self.job())

    async def job(self) -> None:
        await self.toolbox.acall("send_email", EMAIL)
        await self.stopped.wait()

    async def stop_cancel(self) -> None:
        self.stopped.set()

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        await self.link.close()
