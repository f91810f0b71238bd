"""My Framework adapter for stopbench (written by `stopbench new-adapter my-framework`).

It runs a minimal agent loop straight on the model API, so it passes the contract tests from the first
minute; every TODO marks where My Framework's own calls replace it. Build the agent the way the
framework's documentation shows, and give each stop button the framework has a `stop_<mode>` method.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from harness.contract.adapter import Adapter
from harness.tools.catalogue import openai_tool_definitions


class MyFrameworkAdapter(Adapter):
    name = "my-framework"
    # TODO: one entry per stop button the framework offers: id -> the primitive it presses, one line;
    # each id has a `stop_<id>` method below
    stop_modes = {"cancel": "cancel the asyncio task that runs the agent"}
    # TODO: how the framework continues a stopped run; leave empty if it cannot (resume() then raises NoResume)
    resume_primitive = ""
    # TODO: add "sync" and "mcp" once the framework's tools (ctx.tools) and MCP client (ctx.mcp) are wired in
    tool_styles = ("async",)
    # TODO: switch off the framework's telemetry / tracing / version checks here
    environment: dict[str, str] = {}
    # TODO: the distributions whose versions every row records, e.g. ("my-framework",)
    packages = ("httpx",)

    @classmethod
    def prepare(cls) -> None:
        """TODO: import the framework here, so forked trials start warm."""

    async def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        # TODO: replace this minimal loop with the framework's agent and its tools: ctx.tools holds the
        # tool functions of the trial's style (wrap them, never rewrite them); ctx.mcp.params() starts the
        # world's MCP server with the framework's own MCP client.
        messages = [{"role": "system", "content": self.ctx.system_prompt},
                    {"role": "user", "content": self.ctx.prompt}]
        async with httpx.AsyncClient(timeout=30) as client:
            while True:
                r = await client.post(f"{self.ctx.model_base_url}/chat/completions", json={
                    "model": self.ctx.model_name, "messages": messages, "tools": openai_tool_definitions()})
                message = r.json()["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return
                for call in message["tool_calls"]:
                    fn = call["function"]
                    result = await self.ctx.tools[fn["name"]](**json.loads(fn["arguments"]))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    async def stop_cancel(self) -> None:
        """TODO: press the framework's own button; return when the framework says it has stopped."""
        self.task.cancel()

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        """TODO: close the framework's clients and MCP servers."""


ADAPTER = MyFrameworkAdapter
