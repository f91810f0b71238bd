"""Agno (agno 3.1): a plain `Agent` with the scenario's tools on a SqliteDb session, stopped the way the docs show.

docs.agno.com "Cancelling a Run": `agent.cancel_run(run_id)` / `acancel_run(run_id)` marks the run in the process's
cancellation manager (the default in-memory one, agno/run/cancel.py); the run stops at its next cooperative check,
ending streamed runs with a `RunEvent.run_cancelled` event. Also measured: leaving the stream loop, and cancelling
the task awaiting a non-streamed `arun`. Resume: the next user message on the same session (history in context).
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.contract.kit import API_KEY, NEXT_INPUT, KitAdapter, OwnedContext


class AgnoAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import agno.agent  # noqa: F401
        import agno.db.sqlite  # noqa: F401
        import agno.models.openai  # noqa: F401
        import agno.tools.mcp  # noqa: F401

    async def start(self) -> None:
        from agno.agent import Agent
        from agno.db.sqlite import SqliteDb
        from agno.models.openai import OpenAIChat

        self.run_id: str | None = None
        self.started = asyncio.Event()  # the run's first event (its run_id) has been read
        tools: list[Any] = list(self.ctx.tools.values())
        if self.ctx.tool_style == "mcp":  # connect() / close() held by one task, as the docs' lifecycle
            from agno.tools.mcp import MCPTools
            from mcp import StdioServerParameters

            self.mcp = await OwnedContext.open(lambda: MCPTools(server_params=StdioServerParameters(
                **self.ctx.mcp.params())))
            self.on_close(self.mcp.close)
            tools = [self.mcp.value]
        model = OpenAIChat(id=self.ctx.model_name, base_url=self.ctx.model_base_url, api_key=API_KEY)
        self.agent = Agent(model=model, tools=tools, instructions=self.ctx.system_prompt, telemetry=False,
                           db=SqliteDb(db_file=str(self.ctx.workdir / "agno.db")), add_history_to_context=True,
                           session_id=self.ctx.run_id)
        self.job = self._launch(self.ctx.prompt)

    def _launch(self, message: str) -> asyncio.Task:
        if self.mode == "task_cancel":
            return asyncio.create_task(self.agent.arun(message))
        return asyncio.create_task(self._stream(message))

    async def _stream(self, message: str) -> None:
        async for event in self.agent.arun(message, stream=True):
            if self.run_id is None and getattr(event, "run_id", None):
                self.run_id = event.run_id
                self.started.set()
            if self.mode == "break" and self.stop_pressed.is_set():
                break

    async def stop_cancel_run(self) -> None:
        await self.until(self.started)
        if self.run_id is not None:
            await self.agent.acancel_run(self.run_id)
        await self.until_done()

    stop_break = KitAdapter.flag_and_wait

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.started.clear()
        self.run_id = None
        self.job = self._launch(NEXT_INPUT)
        await self.job


ADAPTER = AgnoAdapter
