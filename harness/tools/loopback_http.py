"""A minimal asyncio HTTP/1.1 client for JSON POSTs to the world on loopback.

The MCP server uses it instead of httpx: a server process is started for every MCP session (some
frameworks start one per tool call), and importing an HTTP stack costs more CPU than the whole server
needs. Standard library only; one connection per request (`Connection: close`), as the tools' own
httpx clients do (a client per call). Cancelling the call closes the connection, as httpx does.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit


class LoopbackHTTPError(OSError):
    """The world answered something that is not HTTP/1.1 with a Content-Length."""


async def post_json(url: str, body: Any, headers: dict[str, str] | None = None,
                    timeout_s: float = 30.0) -> tuple[int, str]:
    """POST `body` as JSON; returns (status, response text)."""
    return await asyncio.wait_for(_post(url, body, headers or {}), timeout_s)


async def _post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, str]:
    parts = urlsplit(url)
    data = json.dumps(body).encode()
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}", "Content-Type: application/json",
            f"Content-Length: {len(data)}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()
        status_line = await reader.readline()
        fields = status_line.split()
        if len(fields) < 2 or not fields[1].isdigit():
            raise LoopbackHTTPError(f"POST {url}: not an HTTP answer: {status_line[:80]!r}")
        length = None
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        text = await reader.readexactly(length) if length is not None else await reader.read()
        return int(fields[1]), text.decode()
    finally:
        writer.close()
