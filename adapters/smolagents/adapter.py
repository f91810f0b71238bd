"""smolagents (Hugging Face): a `ToolCallingAgent` with the scenario's tools, and each stop its users have.

smolagents is synchronous: `agent.run(task)` blocks its caller, so an app runs it on a thread of its own (a sync web
handler's, or `asyncio.to_thread` from async code). Its one stop button is `agent.interrupt()`, a flag the run checks
at the top of each step; the workarounds users reach for are leaving the `run(..., stream=True)` generator (what a
chat UI's stop does to `stream_to_gradio`), cancelling the task that awaits the thread, and abandoning the thread.
Every run keeps its steps in `agent.memory`; resume() runs the same agent again with `reset=False` and the user's
next input, as GradioUI does for each new message (`stream_to_gradio(..., reset_agent_memory=False)`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.contract.kit import NEXT_INPUT, KitAdapter, in_own_thread, until_done, warm

STREAMED = ("stream_interrupt", "stream_break")  # the handler reads agent.run(..., stream=True)


class SmolagentsAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import smolagents  # noqa: F401
        import smolagents.mcp_client  # noqa: F401 (mcpadapt, mcp)
        warm("openai", "openai.resources.chat.chat", "httpcore2", "jsonschema")

    async def start(self) -> None:
        from rich.console import Console
        from smolagents import AgentLogger, LogLevel, OpenAIServerModel, ToolCallingAgent, tool

        self.model = self.model_client(OpenAIServerModel, url="api_base", model_id=self.ctx.model_name)
        self.on_close(self.model.client.close)
        tools = [tool(fn) for fn in self.ctx.tools.values()]  # sync tools: called on the run's thread
        if self.ctx.tool_style == "mcp":  # the server's tools through smolagents' MCPClient (mcpadapt)
            client = await in_own_thread(self._mcp_client, name="smolagents-mcp-connect")
            self.on_close(lambda: until_done(in_own_thread(client.disconnect, name="smolagents-mcp-disconnect")))
            tools = client.get_tools()
        # verbosity off: the default (INFO) prints every step to the subject's stdout, which is the bench's log; the
        # streamed step display (rich Live, stream_outputs=True) ignores the level, so its console is quiet (its
        # refresh thread runs all the same)
        logger = AgentLogger(level=LogLevel.OFF, console=Console(quiet=True))
        self.agent = ToolCallingAgent(tools=tools, model=self.model, instructions=self.ctx.system_prompt,
                                      stream_outputs=self.mode in STREAMED, logger=logger)
        self.job = self._launch(self.ctx.prompt, reset=True)

    def _mcp_client(self) -> Any:
        """`MCPClient(...)` connects at once: it starts the server and lists its tools (blocking, so off the loop)."""
        from mcp import StdioServerParameters
        from smolagents import MCPClient

        return MCPClient(StdioServerParameters(**self.ctx.mcp.params()))

    def _launch(self, task: str, reset: bool) -> asyncio.Future:
        if self.mode == "task_cancel":  # async code awaiting the blocking run on the loop's default executor
            return asyncio.create_task(asyncio.to_thread(self.agent.run, task, reset=reset))
        handler = self._stream_handler if self.mode in STREAMED else self._handler
        return in_own_thread(handler, task, reset, name="smolagents-handler")

    def _handler(self, task: str, reset: bool) -> Any:
        """A sync web handler: the run, to its end (or its AgentError)."""
        return self.agent.run(task, reset=reset)

    def _stream_handler(self, task: str, reset: bool) -> None:
        """A streaming handler, as `stream_to_gradio` reads the run: every step and delta as it comes; it leaves the
        loop once the user pressed stop (`stream_break` only)."""
        for _event in self.agent.run(task, stream=True, reset=reset):
            if self.mode == "stream_break" and self.stop_pressed.is_set():
                break

    # --- the stop buttons (task_cancel: KitAdapter's) ------------------------------------------------

    async def stop_interrupt(self) -> None:
        """agent.interrupt(); returns when the run has ended (at the top of its next step, or at its end)."""
        self.agent.interrupt()
        await self.until_done()

    stop_stream_interrupt = stop_interrupt
    stop_stream_break = KitAdapter.flag_and_wait  # the handler leaves at its next event

    async def stop_sync_abandon(self) -> None:
        """The caller stops waiting: the handler's thread is left to itself (close() cannot end it either)."""

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.job = self._launch(NEXT_INPUT, reset=False)
        await self.job


ADAPTER = SmolagentsAdapter
