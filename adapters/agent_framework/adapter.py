"""Microsoft Agent Framework (agent-framework-core): an `Agent` with the scenario's tools, and its stop buttons.

The agent is the one the docs build (learn.microsoft.com/agent-framework, "Agents", samples/01-get-started):
`Agent(client=OpenAIChatClient(...), instructions=..., tools=[...])` (with MCP, opened with `async with agent`,
which connects its `MCPStdioTool`), run with `agent.run(prompt, session=session)` or `async for update in agent.run(...,
stream=True)`. The framework has no cancel API (a CancellationToken was declined in microsoft/agent-framework
PR #458): its stops are asyncio task cancel (samples/02-agents/chat_client/chat_response_cancellation.py),
leaving or closing the stream (`ResponseStream.close()`, `__aexit__` "including an early consumer break"), and
middleware raising `MiddlewareTermination` (samples/02-agents/middleware/middleware_termination.py).
The workflow stops are in `AgentFrameworkWorkflowAdapter` (workflow.py), benched as a variant.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from harness.contract.kit import NEXT_INPUT, KitAdapter, OwnedContext, warm
from harness.tools.catalogue import TOOL_KIND


class AgentFrameworkAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        """Import what the framework imports lazily (`agent_framework` loads its modules on first use; the openai
        client its Responses resources): in a forked subject that cost ~1 s of CPU before the first model request."""
        import mcp.client.stdio  # noqa: F401
        from agent_framework import Agent, AgentSession, MCPStdioTool, chat_middleware, tool  # noqa: F401
        from agent_framework.openai import OpenAIChatClient

        client = OpenAIChatClient(model="m", base_url="http://127.0.0.1:9/v1", api_key="x")
        client.client.responses  # noqa: B018 (a lazy import)
        warm("jsonschema")
        Agent(client=client, tools=[tool(_warm_tool)]).create_session()

    async def start(self) -> None:
        self.agent = self._agent()
        await self._open_mcp()
        self.session = self.agent.create_session()
        self.job = self._launch(self.ctx.prompt)

    async def _open_mcp(self) -> None:
        """`async with agent` connects its MCPStdioTool; held by a task of its own from start() to close() (anyio)."""
        if self.ctx.tool_style == "mcp":
            opened = await OwnedContext.open(lambda: self.agent)
            self.on_close(opened.close)

    def _agent(self, approval: bool = False) -> Any:
        """The docs' Agent: the Responses client at the world, the trial's tools (or the MCP server), middleware."""
        from agent_framework import Agent, MCPStdioTool, tool
        from agent_framework.openai import OpenAIChatClient

        tools: list[Any]
        if self.ctx.tool_style == "mcp":
            params = self.ctx.mcp.params()
            gate = {"always_require_approval": list(TOOL_KIND)} if approval else None
            tools = [MCPStdioTool("world", params["command"], args=params["args"], env=params["env"],
                                  load_prompts=False, approval_mode=gate)]
        else:  # the framework runs plain functions on asyncio.to_thread (FunctionTool.invoke)
            tools = [tool(fn, approval_mode="always_require" if approval and name in TOOL_KIND else None)
                     for name, fn in self.ctx.tools.items()]
        client = self.model_client(OpenAIChatClient, model=self.ctx.model_name)  # it builds its AsyncOpenAI
        self.on_close(client.client.close)  # which nothing of the framework closes (OpenAIChatClient has no close)
        return Agent(client=client, name="assistant", instructions=self.ctx.system_prompt, tools=tools,
                     middleware=self._stop_middleware() if self.mode == "terminate" else None)

    def _stop_middleware(self) -> list[Any]:
        """The cooperative stop: no model call and no tool call once stop is pressed (MiddlewareTermination)."""
        from agent_framework import MiddlewareTermination, chat_middleware, function_middleware

        pressed = self.stop_pressed

        @chat_middleware
        async def stop_before_model_call(context: Any, call_next: Callable[[], Awaitable[None]]) -> None:
            if pressed.is_set():
                raise MiddlewareTermination("stopped by the user")
            await call_next()

        @function_middleware
        async def stop_before_tool_call(context: Any, call_next: Callable[[], Awaitable[None]]) -> None:
            if pressed.is_set():
                raise MiddlewareTermination("stopped by the user")
            await call_next()

        return [stop_before_model_call, stop_before_tool_call]

    def _launch(self, input: str) -> asyncio.Task:
        if self.mode == "task_cancel":
            return asyncio.create_task(self.agent.run(input, session=self.session))
        return asyncio.create_task(self._consume(input))

    async def _consume(self, input: str) -> None:
        """The application's loop over the streamed updates (what a chat UI runs)."""
        if self.mode == "close":
            async with self.agent.run(input, stream=True, session=self.session) as stream:
                async for _update in stream:
                    if self.stop_pressed.is_set():
                        break
            return
        async for _update in self.agent.run(input, stream=True, session=self.session):
            if self.mode == "break" and self.stop_pressed.is_set():
                break

    # --- the stop buttons: each returns when the application's call to the agent has returned or raised ---

    stop_stream_cancel = KitAdapter.stop_task_cancel  # as task_cancel (KitAdapter's), on the task iterating the stream
    # break, close: the loop leaves at its next update (close: `async with` closes the stream); terminate: the
    # middleware ends the run at its next model call or tool call
    stop_break = stop_close = stop_terminate = KitAdapter.flag_and_wait

    async def resume(self) -> None:
        from agent_framework import AgentSession

        self.stop_pressed.clear()
        saved = json.dumps(self.session.to_dict())  # as if written to disk and read back
        self.session = AgentSession.from_dict(json.loads(saved))
        self.job = self._launch(NEXT_INPUT)
        await self.job


def _warm_tool(text: str) -> str:
    """Only for prepare(): a FunctionTool built once in the parent."""
    return text


ADAPTER = AgentFrameworkAdapter
