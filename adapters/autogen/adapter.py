"""AutoGen AgentChat 0.7.5: a RoundRobinGroupChat of one AssistantAgent, and the stop buttons AgentChat documents.

The team is built the way the AgentChat tutorial builds one (docs: user-guide/agentchat-user-guide/tutorial/
teams.html and termination.html): an `OpenAIChatCompletionClient` pointed at the world, an `AssistantAgent`
that streams (`model_client_stream=True`) and calls its tools until the model answers in text, and
`TextMessageTermination | MaxMessageTermination | ExternalTermination` as the termination condition.
The job is the application's loop over `team.run_stream(task=..., cancellation_token=token)`, or, for the
`task_cancel` mode, an asyncio task running `team.run(task=...)`.

Stop modes are the framework's own buttons; each stop() returns when the application's call to the team has
returned or raised (the moment a UI would say "stopped"), except `pause`, which returns when `team.pause()` does.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from harness.contract.kit import KitAdapter, warm

MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
              "structured_output": False, "multiple_system_messages": True}
AGENT = "assistant"
MAX_TOOL_ITERATIONS = 20  # inbox_triage needs 5 sequential tool turns inside one agent response
MAX_MESSAGES = 10


class AutogenAdapter(KitAdapter):
    cancel_on_close = False  # close() leaves a run still going (after `pause`) alone

    @classmethod
    def prepare(cls) -> None:
        import autogen_agentchat.teams  # noqa: F401
        import autogen_ext.models.openai  # noqa: F401
        import autogen_ext.tools.mcp  # noqa: F401
        warm("openai.resources.chat.chat", "httpcore2", "autogen_agentchat.agents", "jsonschema")

    async def start(self) -> None:
        from autogen_core import CancellationToken
        from autogen_core.tools import FunctionTool
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        ctx = self.ctx
        self.client = self.model_client(OpenAIChatCompletionClient, model=ctx.model_name, model_info=MODEL_INFO)
        self.on_close(self.client.close)
        self.tools: list[Any] | None = None
        self.workbench = None
        if ctx.tool_style == "mcp":
            import autogen_ext.tools.mcp as mcp

            if hasattr(mcp, "McpWorkbench"):  # 0.5 and later
                self.workbench = mcp.McpWorkbench(mcp.StdioServerParams(**ctx.mcp.params()))
                self.on_close(self.workbench.stop)
                await self.workbench.start()  # what `async with McpWorkbench(...)` enters
                await self.workbench.list_tools()  # start() only spawns the session actor: wait until it serves
            else:  # 0.4's docs: the server's tools as agent tools, a session per call
                self.tools = await mcp.mcp_server_tools(mcp.StdioServerParams(**ctx.mcp.params()))
        else:
            self.tools = [FunctionTool(fn, description=fn.__doc__) for fn in ctx.tools.values()]
        self.team, self.external = self._team()
        self.token = CancellationToken()
        if self.mode == "task_cancel":
            self.job = asyncio.create_task(self.team.run(task=ctx.prompt))
        else:
            self.job = asyncio.create_task(self._run_stream(ctx.prompt))

    def _team(self):
        """A RoundRobinGroupChat of one AssistantAgent with the usual termination conditions."""
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.conditions import ExternalTermination, MaxMessageTermination, TextMessageTermination
        from autogen_agentchat.teams import RoundRobinGroupChat

        accepts = inspect.signature(AssistantAgent.__init__).parameters
        # workbench= came in 0.5; max_tool_iterations= in 0.6 (before it, the team gives the agent another turn
        # after each tool call: the loop its docs of then show)
        since = {"workbench": self.workbench, "max_tool_iterations": MAX_TOOL_ITERATIONS}
        agent = AssistantAgent(
            AGENT, model_client=self.client, tools=self.tools,
            system_message=self.ctx.system_prompt, model_client_stream=True, reflect_on_tool_use=False,
            **{k: v for k, v in since.items() if k in accepts})
        external = ExternalTermination()
        termination = TextMessageTermination(AGENT) | MaxMessageTermination(MAX_MESSAGES) | external
        return RoundRobinGroupChat([agent], termination_condition=termination), external

    async def _run_stream(self, task: str) -> None:
        """The application's loop over the team's stream (what a chat UI runs)."""
        async for _message in self.team.run_stream(task=task, cancellation_token=self.token):
            if self.stop_pressed.is_set():
                break

    # --- the stop buttons: each returns when the application's call to the team has returned or raised ---

    async def stop_token(self) -> None:
        self.token.cancel()
        await self.until_done()

    async def stop_external(self) -> None:
        self.external.set()
        await self.until_done()

    stop_break = KitAdapter.flag_and_wait  # the loop leaves at its next message

    async def stop_pause(self) -> None:
        await self.team.pause()  # returns when team.pause() does

    async def resume(self) -> None:
        await self.team.run()  # no task: "continue the previous task" (BaseGroupChat.run docstring)


class AutogenLoadStateAdapter(AutogenAdapter):
    """The other documented resume path: save_state() of the stopped team, load_state() into a fresh team, run().

    Run it with `stopbench run --adapter adapters.autogen.adapter:AutogenLoadStateAdapter`.
    """

    async def resume(self) -> None:
        state = json.loads(json.dumps(await self.team.save_state()))  # as if written to disk and read back
        self.team, self.external = self._team()
        await self.team.load_state(state)
        await self.team.run()


ADAPTER = AutogenAdapter
