"""The MCP stdio server, driven by the real `mcp` client: tools listed, calls reach the ledger, no orphan."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness.tools.catalogue import TOOL_PARAMETERS
from tests.processes import cmdline

TOOLS = ("draft_document", "send_email", "open_pr", "book_meeting", "post_chat")


async def _session(run_url: str) -> tuple[dict, dict]:
    """List the tools and send one email over MCP; note the client's child processes while it is up."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "harness.tools.mcp_server", "--run-url", run_url])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        result = await session.call_tool("send_email", {"to": "m@example.com", "subject": "S", "body": "B"})
        assert not result.is_error, result
        text = "".join(c.text for c in result.content if c.type == "text")
        children = {p.pid: cmdline(p) for p in psutil.Process().children(recursive=True)}
        return tools, {"answer": json.loads(text), "children": children}


def test_mcp_server_tools_calls_and_lifecycle(world_client):
    run = world_client.create_run({"name": "mcp", "turns": [{"text_tokens": 1}], "offsets": [],
                                   "latency_ms": {"email": 5}})
    tools, seen = asyncio.run(asyncio.wait_for(_session(run["services_base_url"]), 60))

    assert sorted(tools) == sorted(TOOLS)
    for name, tool in tools.items():
        schema = tool.input_schema
        assert set(schema["properties"]) == set(TOOL_PARAMETERS[name])
        assert set(schema.get("required", [])) == set(TOOL_PARAMETERS[name])
        assert tool.description
    assert seen["answer"]["effect_id"] == "email_1" and seen["answer"]["status"] == "committed"

    events = world_client.ledger(run["run_id"])["events"]
    registered = [e for e in events if e["event"] == "process_registered"]
    assert len(registered) == 1 and registered[0]["role"] == "mcp_server"
    pid = registered[0]["pid"]
    assert pid in seen["children"]  # the server process the client started, not some other one
    assert "harness.tools.mcp_server" in seen["children"][pid]
    committed = [e for e in events if e["event"] == "effect_committed"]
    assert [(e["kind"], e["effect_id"]) for e in committed] == [("email", "email_1")]
    received = next(e for e in events if e["event"] == "effect_received")
    assert received["t"] > registered[0]["t"]

    deadline = time.monotonic() + 5
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not psutil.pid_exists(pid), f"MCP server {pid} outlived its client"
