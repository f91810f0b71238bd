"""A minimal asyncio HTTP/1.1 client for the harness's own talk with the world on loopback.

The MCP server (a process per MCP session) and every subject (a process per trial) use it instead of
httpx: importing, building and first using an HTTP stack in a fresh or freshly forked process costs more
than all the requests they make. Standard library only; one connection per request
(`Connection: close`), so no harness connection stays open between requests; cancelling a call closes
its connection, as httpx does. `stream_lines` reads a server-sent event stream (chunked).
Every request carries SENT_HEADER, stamped once the connection is open, just before the one write of
head and body: the world records it on effects (the MCP server's tool calls come through here).
The frameworks' own traffic never goes through here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from harness.vocabulary import SENT_HEADER

if TYPE_CHECKING:
    from harness.stop_button import StopButton

_NO_BODY = object()


class LoopbackHTTPError(OSError):
    """The world answered something that is not HTTP/1.1, or an error status where none was expected."""


class Answer:
    """What `LoopbackClient` returns: the subset of httpx.Response the harness uses."""

    def __init__(self, method: str, url: str, status: int, text: str):
        self.method, self.url, self.status_code, self.text = method, url, status, text

    def json(self) -> Any:
        return json.loads(self.text)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise LoopbackHTTPError(f"{self.method} {self.url}: HTTP {self.status_code} {self.text[:300]}")


async def _open(method: str, url: str, body: Any, headers: dict[str, str], unless_pressed: StopButton | None = None,
                connection: str = "close"):
    parts = urlsplit(url)
    data = b"" if body is _NO_BODY else json.dumps(body).encode()
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    try:
        sent = _send_time(unless_pressed)
    except BaseException:  # not sent (the stop button was pressed): nothing was written
        writer.close()
        raise
    head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", f"Connection: {connection}",
            *(["Content-Type: application/json", f"Content-Length: {len(data)}"] if body is not _NO_BODY else []),
            *(f"{k}: {v}" for k, v in headers.items() if k.lower() != SENT_HEADER.lower()),
            f"{SENT_HEADER}: {sent}"]  # the send time: the head is written at once
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
    await writer.drain()
    status_line = await reader.readline()
    fields = status_line.split()
    if len(fields) < 2 or not fields[1].isdigit():
        writer.close()
        raise LoopbackHTTPError(f"{method} {url}: not an HTTP answer: {status_line[:80]!r}")
    found: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        found[name.strip().lower()] = value.strip()
    return int(fields[1]), found, reader, writer


def _send_time(unless_pressed: StopButton | None) -> int:
    """Now; with a stop button, ordered against its press (StopPressed after it: nothing is written)."""
    return unless_pressed.send_time() if unless_pressed is not None else time.monotonic_ns()


async def _request(method: str, url: str, body: Any, headers: dict[str, str],
                   unless_pressed: StopButton | None = None) -> tuple[int, str]:
    status, found, reader, writer = await _open(method, url, body, headers, unless_pressed)
    try:
        if "content-length" in found:
            data = await reader.readexactly(int(found["content-length"]))
        else:
            data = await reader.read()
        return status, data.decode()
    finally:
        writer.close()


async def request(method: str, url: str, body: Any = _NO_BODY, headers: dict[str, str] | None = None,
                  timeout_s: float = 30.0, unless_pressed: StopButton | None = None) -> tuple[int, str]:
    """(status, response text). `unless_pressed`: StopPressed rather than send after that button's press."""
    return await asyncio.wait_for(_request(method, url, body, headers or {}, unless_pressed), timeout_s)


async def post_json(url: str, body: Any, headers: dict[str, str] | None = None,
                    timeout_s: float = 30.0, unless_pressed: StopButton | None = None) -> tuple[int, str]:
    """POST `body` as JSON; returns (status, response text). The toolbox's `apost` in the MCP server."""
    return await request("POST", url, body, headers, timeout_s, unless_pressed)


async def stream_lines(url: str) -> AsyncIterator[str]:
    """GET a server-sent event stream and yield its lines as they come (chunked transfer encoding)."""
    status, found, reader, writer = await _open("GET", url, _NO_BODY, {"Accept": "text/event-stream"})
    try:
        if status >= 400:
            raise LoopbackHTTPError(f"GET {url}: HTTP {status}")
        async for line in body_lines(reader, found):
            yield line
    finally:
        writer.close()


async def open_stream(url: str, body: Any) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter,
                                                     AsyncIterator[str]]:
    """POST `body` and open the answer as a server-sent event stream: (status, reader, writer, its lines). The
    caller owns the connection: closing `writer` is a client that goes away. It asks to keep the connection
    alive, as a browser's fetch does (a server may stop reading a connection that is to close once answered, and
    then not notice the client leaving)."""
    status, found, reader, writer = await _open("POST", url, body, {"Accept": "text/event-stream"},
                                                connection="keep-alive")
    return status, reader, writer, body_lines(reader, found)


async def body_lines(reader: asyncio.StreamReader, found: dict[str, str]) -> AsyncIterator[str]:
    """An answer's body, line by line as it comes (chunked or to the end of the connection)."""
    chunked = found.get("transfer-encoding", "").lower() == "chunked"
    buffer = b""
    while True:
        if chunked:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return
            data = await reader.readexactly(size)
            await reader.readline()  # the CRLF after the chunk
        else:
            data = await reader.read(65536)
            if not data:
                return
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line.decode().rstrip("\r")


class LoopbackClient:
    """`get` / `post` as the harness calls them on httpx, over `request`."""

    def __init__(self, timeout_s: float = 30.0):
        self.timeout_s = timeout_s

    async def get(self, url: str, params: dict[str, Any] | None = None, timeout: float | None = None) -> Answer:
        full = f"{url}?{urlencode(params)}" if params else url
        status, text = await request("GET", full, timeout_s=timeout or self.timeout_s)
        return Answer("GET", url, status, text)

    async def post(self, url: str, json: Any = None, timeout: float | None = None) -> Answer:
        status, text = await request("POST", url, json, timeout_s=timeout or self.timeout_s)
        return Answer("POST", url, status, text)
