"""Strands Agents (strands-agents, import `strands`): its stop buttons, pressed the way its docs show.

The agent is the documented one: `Agent(model=..., tools=[...], system_prompt=..., session_manager=
FileSessionManager(...), callback_handler=None)`, the model the strands.models class of the trial's provider
(`OpenAIModel`, `AnthropicModel`, `GeminiModel`, each with `client_args` naming the world's base URL and a
key), the tools wrapped with `strands.tool`, the MCP server attached as a managed `MCPClient`
(`Agent(tools=[mcp_client])`, docs: "Managed Integration (Recommended)").

Stop buttons (docs: concepts/agents/agent-loop.mdx "Cancellation", concepts/interrupts.mdx; `Agent.cancel`):
- cancel:             `agent.cancel()` from the stop handler while a task awaits `agent.invoke_async(prompt)`.
- cancel_after_tools: `agent.cancel(after_current_tools=True)`: the tool batch already asked for finishes first.
- break:              leave `async for event in agent.stream_async(prompt)` at the next event.
- task_cancel:        `task.cancel()` on the task awaiting `agent.invoke_async(prompt)`.
- interrupt:          a `BeforeToolCallEvent` hook raises `event.interrupt(...)` before every side-effect tool; the
                      app approves until the stop, then leaves the run paused at its next interrupt.
- sync_cancel:        `agent(prompt)` on a thread of its own (a sync handler); `agent.cancel()` from another thread.
- sync_abandon:       `agent(prompt)` on a thread of its own; the caller stops waiting for it.
Resume: a new `Agent` on the same `FileSessionManager` session (the next request of a server: docs interrupts.mdx
"Session Management"), asked to go on; after `interrupt`, the pending interrupts answered (approved).
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.contract.kit import API_KEY, NEXT_INPUT, KitAdapter, in_own_thread, warm
from harness.tools.catalogue import TOOL_KIND

SYNC = ("sync_cancel", "sync_abandon")
#: the interrupt name of the approval hook, and what the user answers
GATE, APPROVE = "stopbench-approval", "y"
#: AnthropicModel requires max_tokens (the Messages API has no default); the scripted answers are far shorter
ANTHROPIC_MAX_TOKENS = 4096


class StrandsAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import mcp  # noqa: F401
        import strands  # noqa: F401
        import strands.models.anthropic  # noqa: F401
        import strands.models.gemini  # noqa: F401
        import strands.models.openai  # noqa: F401
        import strands.session  # noqa: F401
        import strands.tools.mcp  # noqa: F401
        warm("openai.resources.chat.chat", "anthropic.resources.messages", "google.genai.models", "httpcore2",
             "jsonschema")

    async def start(self) -> None:
        self.mcp_client: Any = self._mcp_client() if self.ctx.tool_style == "mcp" else None
        self.pending: list[Any] = []  # interrupt: the interrupts the stopped run was left paused at
        # Agent(tools=[mcp_client]) starts the MCP server (a thread of the client's own, blocking until it has
        # listed the tools): built off the loop, as an async app would build it in a worker
        self.agent = await asyncio.to_thread(self._agent)
        self.job = self._launch(self.ctx.prompt)

    def _mcp_client(self) -> Any:
        from mcp import StdioServerParameters, stdio_client
        from strands.tools.mcp import MCPClient

        params = StdioServerParameters(**self.ctx.mcp.params())
        return MCPClient(lambda: stdio_client(params))

    def _agent(self) -> Any:
        """The agent of one request; its conversation lives in the trial's FileSessionManager session."""
        from strands import Agent, tool
        from strands.session import FileSessionManager

        model = self._model()
        # sync functions are run with asyncio.to_thread (strands/tools/decorator.py)
        tools: list[Any] = [tool(fn) for fn in self.ctx.tools.values()] or [self.mcp_client]
        sessions = FileSessionManager(session_id=self.ctx.run_id, storage_dir=str(self.ctx.workdir / "strands"))
        agent = Agent(model=model, tools=tools, system_prompt=self.ctx.system_prompt, session_manager=sessions,
                      hooks=[self._approvals()] if self.mode == "interrupt" else None, callback_handler=None)
        self.on_close(agent.cleanup)  # the tool providers (the managed MCPClient) of this agent
        return agent

    def _model(self) -> Any:
        """The strands.models class of the trial's provider, its SDK client made from `client_args` (the world's
        base URL and a key; retries, back-off and timeouts the SDK's defaults)."""
        name = self.ctx.model_name
        if self.ctx.provider == "anthropic":
            from strands.models.anthropic import AnthropicModel

            model = AnthropicModel(client_args=self.client_settings(), model_id=name, max_tokens=ANTHROPIC_MAX_TOKENS)
            self.on_close(model.client.close)  # made once in __init__ and never closed by strands
            return model
        if self.ctx.provider == "gemini":
            from strands.models.gemini import GeminiModel

            # a new genai.Client per request (models/gemini.py `_get_client`), left by strands to the garbage collector
            return GeminiModel(client_args={"api_key": API_KEY, "http_options": {"base_url": self.ctx.model_base_url}},
                               model_id=name)
        from strands.models.openai import OpenAIModel

        return OpenAIModel(client_args=self.client_settings(), model_id=name)

    def _approvals(self) -> Any:
        """docs interrupts.mdx `ApprovalHook`: ask before each side-effect tool; a declined one is not run."""
        from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry

        class Approval(HookProvider):
            def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
                registry.add_callback(BeforeToolCallEvent, self.approve)

            def approve(self, event: BeforeToolCallEvent) -> None:
                if event.tool_use["name"] not in TOOL_KIND:
                    return
                if event.interrupt(GATE, reason={"tool": event.tool_use["name"]}) != APPROVE:
                    event.cancel_tool = "The user declined."

        return Approval()

    # --- the jobs ------------------------------------------------------------------------------------------

    def _launch(self, prompt: Any) -> asyncio.Future:
        if self.mode in SYNC:
            return in_own_thread(self.agent, prompt, name="strands-sync-handler")
        if self.mode == "break":
            return asyncio.create_task(self._stream(prompt))
        if self.mode == "interrupt":
            return asyncio.create_task(self._approving(prompt))
        return asyncio.create_task(self.agent.invoke_async(prompt))

    async def _stream(self, prompt: Any) -> None:
        async for _event in self.agent.stream_async(prompt):
            if self.stop_pressed.is_set():
                break

    async def _approving(self, prompt: Any) -> None:
        """The docs' interrupt loop: answer each interrupt and invoke again, until the user presses stop."""
        result = await self.agent.invoke_async(prompt)
        while result.stop_reason == "interrupt" and not self.stop_pressed.is_set():
            result = await self.agent.invoke_async(_answers(result.interrupts))
        self.pending = list(result.interrupts or []) if result.stop_reason == "interrupt" else []

    # --- the stop buttons (task_cancel: KitAdapter's) --------------------------------------------------------

    async def stop_cancel(self) -> None:
        self.agent.cancel()
        await self.until_done()

    async def stop_cancel_after_tools(self) -> None:
        self.agent.cancel(after_current_tools=True)
        await self.until_done()

    stop_sync_cancel = stop_cancel  # from the event loop's thread: "another thread" of the docs' example
    stop_break = KitAdapter.flag_and_wait  # the loop leaves at its next event
    stop_interrupt = KitAdapter.flag_and_wait  # the run ends at its next interrupt (or at its end)

    async def stop_sync_abandon(self) -> None:
        """The caller stops waiting: the handler's thread is left to itself."""

    async def reported_usage(self) -> int | None:
        """What Strands counted: `agent.event_loop_metrics.accumulated_usage["outputTokens"]` of the stopped agent
        (the docs' metrics: each model call's usage, added up when its stream's metadata event arrives; a call cut
        off before it adds nothing)."""
        return self.agent.event_loop_metrics.accumulated_usage["outputTokens"]

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.agent = await asyncio.to_thread(self._agent)  # restores the session's messages (and interrupts)
        prompt, self.pending = (_answers(self.pending) if self.pending else NEXT_INPUT), []
        self.job = self._launch(prompt)
        await self.job


def _answers(interrupts: list[Any]) -> list[dict[str, Any]]:
    """The user approves every pending interrupt (docs interrupts.mdx `interruptResponse`)."""
    return [{"interruptResponse": {"interruptId": i.id, "response": APPROVE}} for i in interrupts]


ADAPTER = StrandsAdapter
