"""A real MCP stdio server serving the scenario tools for one run, by calling the world's services.

`python -m harness.tools.mcp_server --run-url http://127.0.0.1:PORT/runs/<run_id>`
It registers its pid with the world when it starts, so an orphan is known for certain.

It speaks MCP (JSON-RPC 2.0, one message a line on stdin/stdout) as the `mcp` SDK's servers do, answer for
answer (tests/test_mcp_server.py holds it against the SDK's own server), but on the standard library: a
framework's MCP client starts a server process per session, some frameworks one per tool call, and
importing the SDK (its pydantic models) cost ~0.7 s of CPU per start; this starts in a few tens of ms.
Like the SDK's servers: requests are handled concurrently, `notifications/cancelled` cancels the
request's handler (its HTTP call to the world is closed), end of stdin cancels what is in flight and
exits, SIGTERM ends the process. Its tool calls go out through harness.tools.loopback_http, which stamps
each with the harness's send time (SENT_HEADER) as it writes it: a call this process sent before the stop
is in flight even if the world reads it after. Started with STOP_BUTTON_ENV (only the reference asks for
it), each call asks the trial's stop button as it leaves, and one not yet sent at the press is answered
NOT_SENT (harness/stop_button.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from harness.stop_button import NOT_SENT, STOP_BUTTON_ENV, StopButton, StopPressed
from harness.tools import mitigation as mitigations
from harness.tools.catalogue import TOOL_SPECS
from harness.tools.loopback_http import post_json
from harness.tools.toolbox import Toolbox, bind

SERVER_NAME = "stopbench-world"
#: the protocol versions the SDK's servers accept; a client asking for another gets the newest
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
LINE_LIMIT = 16 * 1024 * 1024
#: what the SDK's servers list although we serve none
EMPTY_LISTS = {"resources/list": "resources", "resources/templates/list": "resourceTemplates",
               "prompts/list": "prompts"}


def _object_schema(title: str, properties: dict[str, str]) -> dict[str, Any]:
    """A JSON Schema of string fields, spelled as pydantic spells a function's model (what the SDK lists)."""
    return {"properties": {p: {"title": p.replace("_", " ").title(), "type": "string"} for p in properties},
            "required": list(properties), "title": title, "type": "object"}


def tool_list(toolbox: Toolbox) -> list[dict[str, Any]]:
    return [{"name": name, "description": toolbox.async_[name].__doc__,
             "inputSchema": _object_schema(f"{name}Arguments", TOOL_SPECS[name][1]),
             "outputSchema": _object_schema(f"{name}Output", {"result": ""})}
            for name in TOOL_SPECS]


class McpServer:
    def __init__(self, toolbox: Toolbox, button: StopButton | None = None):
        """`button`: the trial's stop button, when the agent asked for its calls to ask it (STOP_BUTTON_ENV;
        only the reference does): a call not yet sent at the press is answered NOT_SENT, as an error."""
        self.toolbox = toolbox
        self.button = button
        self.tools = tool_list(toolbox)
        self.in_flight: dict[Any, asyncio.Task] = {}
        self.out = sys.stdout.buffer

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.out.flush()

    async def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if name not in self.toolbox.async_:
            return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}
        arguments = params.get("arguments") or {}
        try:
            if self.button is None:
                text = await self.toolbox.async_[name](**arguments)
            else:
                text = await self.toolbox.acall(name, bind(name, (), arguments), unless_pressed=self.button)
        except StopPressed:
            return {"content": [{"type": "text", "text": NOT_SENT}], "isError": True}
        except Exception as e:  # the tool failed: the client sees an error result, as from the SDK
            return {"content": [{"type": "text", "text": f"Error executing tool {name}: {e}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text}, "isError": False}

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                    "capabilities": {"prompts": {"listChanged": False},
                                     "resources": {"subscribe": False, "listChanged": False},
                                     "tools": {"listChanged": False}},
                    "serverInfo": {"name": SERVER_NAME, "version": ""}}
        if method == "tools/list":
            return {"tools": self.tools}
        if method == "tools/call":
            return await self.call_tool(params)
        if method == "ping":
            return {}
        if method in EMPTY_LISTS:
            return {EMPTY_LISTS[method]: []}
        raise LookupError(method)

    async def request(self, msg: dict[str, Any]) -> None:
        rid, method = msg["id"], msg.get("method", "")
        try:
            params = msg.get("params") or {}
            if not isinstance(params, dict):
                raise TypeError("params must be an object")
            self.send({"jsonrpc": "2.0", "id": rid, "result": await self.answer(method, params)})
        except LookupError:
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": METHOD_NOT_FOUND, "message": "Method not found",
                                                              "data": method}})
        except TypeError as e:
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_PARAMS, "message": str(e)}})
        finally:
            self.in_flight.pop(rid, None)

    def notification(self, msg: dict[str, Any]) -> None:
        if msg.get("method") == "notifications/cancelled":  # the handler stops; a cancelled request gets no answer
            task = self.in_flight.pop((msg.get("params") or {}).get("requestId"), None)
            if task is not None:
                task.cancel()

    async def serve(self, stdin: asyncio.StreamReader) -> None:
        while line := await stdin.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict) or "method" not in msg:
                continue  # a response to nothing we asked: the server never asks
            if "id" in msg:
                self.in_flight[msg["id"]] = asyncio.create_task(self.request(msg))
            else:
                self.notification(msg)
        for task in list(self.in_flight.values()):  # end of stdin: the client is gone
            task.cancel()
        await asyncio.gather(*self.in_flight.values(), return_exceptions=True)


async def _stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


#: a server that stays after the end of its stdin (the `deaf` and `stubborn` launch variants) still ends on its
#: own after this long: far beyond any observation window, so a harness that failed to reap it leaks nothing
STAY_LIMIT_S = 600.0


async def amain(run_url: str, mitigation: str, workdir: str | None, run_id: str, on_eof: str = "exit") -> None:
    status, text = await post_json(f"{run_url}/processes", {"pid": os.getpid(), "role": "mcp_server"}, timeout_s=10)
    if status >= 400:
        raise SystemExit(f"mcp_server: the world refused registration: HTTP {status} {text[:200]}")
    policy = mitigations.Mitigation(mitigation)
    folder = Path(workdir or ".")
    log = policy.saga_log(folder)
    toolbox = Toolbox(run_url, key_policy=policy.key_policy(run_id, folder),
                      on_attempt=log.attempt if log else None, apost=post_json)
    button = StopButton.of_file(Path(os.environ[STOP_BUTTON_ENV])) if os.environ.get(STOP_BUTTON_ENV) else None
    await McpServer(toolbox, button).serve(await _stdin())
    if on_eof == "stay":  # deaf to the end of stdin: a timer keeps the process alive (email-mcp #60)
        deadline = time.monotonic() + STAY_LIMIT_S
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.tools.mcp_server")
    parser.add_argument("--run-url", required=True, help="the run's services base URL")
    parser.add_argument("--mitigation", default="none", choices=mitigations.MITIGATIONS)
    parser.add_argument("--workdir", help="the trial folder (saga log and key generations live there)")
    parser.add_argument("--run-id", default="")
    parser.add_argument("--on-eof", choices=("exit", "stay"), default="exit",
                        help="at the end of stdin: exit (as the SDK's servers do), or stay (a deaf server; "
                             "harness/tools/mcp_launch.py)")
    parser.add_argument("--on-sigterm", choices=("exit", "ignore"), default="exit",
                        help="ignore: only SIGKILL ends it (a stubborn server)")
    args = parser.parse_args(argv)
    if args.on_sigterm == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    asyncio.run(amain(args.run_url.rstrip("/"), args.mitigation, args.workdir, args.run_id, args.on_eof))


if __name__ == "__main__":
    main()
