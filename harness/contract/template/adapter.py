"""My Framework adapter for stopbench (written by `stopbench new-adapter my-framework`).

It runs a minimal agent loop on the official openai SDK's client at its defaults (two retries with back-off on a
429, a 5xx or a dropped connection, then the SDK's own error), so it passes the contract tests from the first
minute, also on the provider-fault scenario (`--contract-scenario flaky_provider`); every TODO marks where My
Framework's own calls replace it. Build the agent the way the framework's documentation shows, and give each stop
button the framework has a `stop_<mode>` method. What the adapter declares (its stop modes, resume, packages,
environment) is in framework.toml.
"""

from __future__ import annotations

import asyncio
import json

from openai import AsyncOpenAI

from harness.contract.kit import KitAdapter
from harness.tools.catalogue import openai_tool_definitions


class MyFrameworkAdapter(KitAdapter):
    """KitAdapter owns `self.job`, the stop flag `self.stop_pressed`, wait(), the `task_cancel` button and close()
    (which cancels a job still running, then calls what `self.on_close(...)` registered)."""

    @classmethod
    def prepare(cls) -> None:
        """TODO: import the framework here, so forked trials start warm."""

    async def start(self) -> None:
        # TODO: build the framework's model client with the trial's settings (as here), and nothing else: its
        # retries, back-off and timeouts stay the defaults users run with
        self.client = self.model_client(AsyncOpenAI)
        self.on_close(self.client.close)
        self.job = asyncio.create_task(self._run())

    async def _run(self) -> None:
        # TODO: replace this minimal loop with the framework's agent and its tools: ctx.tools holds the
        # tool functions of the trial's style (wrap them, never rewrite them); ctx.mcp.params() starts the
        # world's MCP server with the framework's own MCP client.
        messages = [{"role": "system", "content": self.ctx.system_prompt},
                    {"role": "user", "content": self.ctx.prompt}]
        while True:
            completion = await self.client.chat.completions.create(
                model=self.ctx.model_name, messages=messages, tools=openai_tool_definitions())
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                fn = call.function
                result = await self.ctx.tools[fn.name](**json.loads(fn.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    # TODO: a `stop_<mode>` method for each further mode in framework.toml, pressing the framework's own button and
    # returning when the framework says it has stopped (`self.flag_and_wait()` sets the stop flag the job checks)


ADAPTER = MyFrameworkAdapter
