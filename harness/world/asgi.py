"""A thin ASGI connection: body, JSON and SSE out, and a watch for the client going away.

Raw ASGI rather than a framework: the world's hot path is one send per token, and it must know the
moment a client disconnects (to stop generating, and to stamp it), which it learns from `receive`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any


class BodyTooLarge(ValueError):
    """A request body over the world's limit (413)."""


class Connection:
    def __init__(self, scope: dict[str, Any], receive, send):
        self.scope = scope
        self._receive = receive
        self._send = send
        self.disconnected = False
        self.gone_ns: int | None = None  # when the world learned the client had left
        self.gone = asyncio.Event()
        self._complete = False
        self._watch: asyncio.Task | None = None
        self.started = False
        self.on_gone = None  # called once, the moment the client is known to have left

    @property
    def method(self) -> str:
        return self.scope["method"]

    @property
    def path(self) -> str:
        return self.scope["path"]

    def header(self, name: str) -> str | None:
        key = name.lower().encode()
        for k, v in self.scope.get("headers", []):
            if k == key:
                return v.decode("latin-1")
        return None

    def query(self) -> dict[str, str]:
        from urllib.parse import parse_qsl

        return dict(parse_qsl(self.scope.get("query_string", b"").decode()))

    async def read_body(self, limit: int = 8 << 20) -> bytes:
        chunks = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._mark_gone()
                break
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                raise BodyTooLarge(f"request body over {limit} bytes")
            chunks.append(body)
            if not message.get("more_body"):
                break
        self._watch = asyncio.get_running_loop().create_task(self._watch_disconnect())
        return b"".join(chunks)

    async def _watch_disconnect(self) -> None:
        while not self.disconnected:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                if not self._complete:
                    self._mark_gone()
                return

    def _mark_gone(self) -> None:
        if self.disconnected:
            return
        self.disconnected = True
        self.gone_ns = time.monotonic_ns()
        self.gone.set()
        if self.on_gone is not None:
            self.on_gone()

    def close(self) -> None:
        self._complete = True
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def send_body(self, data: bytes, more: bool = True) -> None:
        if not more:
            self._complete = True
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def send_json(self, status: int, obj: Any, headers: list[tuple[bytes, bytes]] = ()) -> None:
        data = json.dumps(obj).encode()
        await self.start(status, [(b"content-type", b"application/json"),
                                  (b"content-length", str(len(data)).encode()), *headers])
        await self.send_body(data, more=False)

    def drop(self) -> None:
        """End the exchange without completing the response: the server closes the connection, and the client
        reads a body cut short (a scripted reset). Marked complete, so it is not taken for the client leaving."""
        self._complete = True

    async def start_sse(self) -> None:
        await self.start(200, [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                               (b"x-accel-buffering", b"no")])
