"""Pydantic AI (pydantic-ai-slim V2): a plain `Agent` with the scenario's tools, and each stop button its docs show.

docs/agent.md "Cancelling a Run" names them: a `CancellationToken` for a stop handler (the one way into a blocked
`run_sync`), `AgentRun.cancel()` when driving `agent.iter()`, `AgentRunEvents.cancel()` on `run_stream_events()`, and
the environment cancelling the task; docs/output.md "Cancelling Streams" adds `AgentStream.cancel()` (the current
response only; `StreamedRunResult.cancel()` is the same on `run_stream()`, whose run ends at the first text the model
streams, see README) and leaving a stream loop. Each job keeps its run's messages the way the docs show for how it
ended, and resume() passes them as `message_history` to a new run with no new prompt, as the docs' examples do.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from harness.contract.kit import KitAdapter, OwnedContext, in_own_thread, warm

ITER = ("cancel", "break", "stream_cancel")  # async with agent.iter(...) as run: async for node in run
EVENTS = ("events_cancel", "break_events")  # async with agent.run_stream_events(...) as events
SYNC = ("sync_abandon", "sync_token")  # agent.run_sync(...) on a thread of its own (a sync web handler)


class PydanticAIAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import fastmcp.client.transports  # noqa: F401
        import pydantic_ai.mcp  # noqa: F401
        import pydantic_ai.models.anthropic  # noqa: F401
        import pydantic_ai.models.google  # noqa: F401
        import pydantic_ai.models.openai  # noqa: F401
        import pydantic_ai.providers.anthropic  # noqa: F401
        import pydantic_ai.providers.google  # noqa: F401
        import pydantic_ai.providers.openai  # noqa: F401

        with contextlib.suppress(Exception):  # only a warm-up: a changed internal must not stop a run
            _warm_up()
        warm("openai.resources.chat.chat", "anthropic.resources.beta.messages", "google.genai.models", "httpcore2",
             "jsonschema")

    async def start(self) -> None:
        self.response_cancelled = asyncio.Event()  # stream_cancel: the response streaming at the press was cancelled
        self.handle: Any = None  # the AgentRun / AgentRunEvents of the running job, once entered
        self.entered = asyncio.Event()
        self.history: list[Any] | None = None  # the messages the stopped run produced
        self.agent = self._agent()
        # an async app holds the agent open for its life (docs/mcp/client.md: `async with agent` starts and stops
        # stdio servers and closes the provider's HTTP client); a sync handler cannot, each run_sync opens its own
        self.app = None if self.mode in SYNC else await OwnedContext.open(lambda: self.agent)
        if self.app is not None:
            self.on_close(self.app.close)
        self.job = self._launch(self.ctx.prompt, None)

    def _agent(self) -> Any:
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai import Agent
        from pydantic_ai.mcp import MCPToolset

        toolsets = [MCPToolset(StdioTransport(**self.ctx.mcp.params()))] if self.ctx.tool_style == "mcp" else []
        # sync tools run on anyio worker threads (pydantic_ai/_utils.py run_in_executor)
        return Agent(self._model(), instructions=self.ctx.system_prompt, tools=list(self.ctx.tools.values()),
                     toolsets=toolsets)

    def _model(self) -> Any:
        """The trial's provider through Pydantic AI's own model class for it, its provider given the world's base
        URL and the key (docs/models/openai.md, anthropic.md, google.md): each SDK client at its defaults."""
        settings = self.client_settings()
        if self.ctx.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(self.ctx.model_name, provider=AnthropicProvider(**settings))
        if self.ctx.provider == "gemini":
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            return GoogleModel(self.ctx.model_name, provider=GoogleProvider(**settings))
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(self.ctx.model_name, provider=OpenAIProvider(**settings))

    def _launch(self, prompt: str | None, history: list[Any] | None) -> asyncio.Future:
        from pydantic_ai import CancellationToken

        self.token = CancellationToken()  # single-use: a fresh one per run (docs/agent.md)
        if self.mode in SYNC:
            return in_own_thread(self._sync_handler, prompt, history, name="pydantic-ai-sync-handler")
        job = self._iter if self.mode in ITER else self._events if self.mode in EVENTS else self._run
        return asyncio.create_task(self._keeping_history(job(prompt, history)))

    # --- the jobs: the docs' ways to run an agent ---------------------------------------------------

    async def _run(self, prompt: str | None, history: list[Any] | None) -> None:
        token = self.token if self.mode == "token" else None
        result = await self.agent.run(prompt, message_history=history, cancellation_token=token)
        self.history = result.all_messages()

    async def _iter(self, prompt: str | None, history: list[Any] | None) -> None:
        from pydantic_ai import Agent

        async with self.agent.iter(prompt, message_history=history) as run:
            self.handle = run
            self.entered.set()
            async for node in run:
                if self.mode == "break" and self.stop_pressed.is_set():
                    break
                if self.mode == "stream_cancel" and Agent.is_model_request_node(node):
                    await self._stream_response(node, run)
        self.history = run.all_messages()

    async def _stream_response(self, node: Any, run: Any) -> None:
        """Stream the model's response as a UI does; once stop is pressed, cancel it (docs/output.md
        "Cancelling with iter"): `AgentStream.cancel()` stops this response only."""
        async with node.stream(run.ctx) as stream:
            async for _event in stream:
                if self.stop_pressed.is_set() and not self.response_cancelled.is_set():
                    await stream.cancel()
                    self.response_cancelled.set()
                    break

    async def _events(self, prompt: str | None, history: list[Any] | None) -> None:
        async with self.agent.run_stream_events(prompt, message_history=history) as events:
            self.handle = events
            self.entered.set()
            async for _event in events:
                if self.stop_pressed.is_set():  # `break_events` only
                    break
        self.history = events.all_messages()  # still readable after the context (docs/agent.md)

    async def _keeping_history(self, job: Any) -> None:
        """Keep the stopped run's messages the way docs/agent.md shows for each ending, and end as it ended."""
        from pydantic_ai import RunCancelled

        try:
            await job
        except RunCancelled as e:
            self.history = e.all_messages()
            raise
        except asyncio.CancelledError as e:
            cancelled = RunCancelled.from_cancellation(e)
            if cancelled is not None:
                self.history = cancelled.all_messages()
            raise

    def _sync_handler(self, prompt: str | None, history: list[Any] | None) -> None:
        """What a sync web handler does: run_sync, and keep the conversation when it returns."""
        from pydantic_ai import RunCancelled

        token = self.token if self.mode == "sync_token" else None
        try:
            result = self.agent.run_sync(prompt, message_history=history, cancellation_token=token)
        except RunCancelled as e:
            self.history = e.all_messages()
            raise
        self.history = result.all_messages()

    # --- the stop buttons (task_cancel: KitAdapter's) ------------------------------------------------

    async def stop_cancel(self) -> None:
        await self.until(self.entered)  # the handle exists once the job has entered its `async with`
        if self.handle is not None:
            self.handle.cancel()
        await self.until_done()

    stop_events_cancel = stop_cancel

    async def stop_token(self) -> None:
        self.token.cancel()
        await self.until_done()

    stop_sync_token = stop_token
    stop_break = stop_break_events = KitAdapter.flag_and_wait  # the loop leaves at its next node / event

    async def stop_stream_cancel(self) -> None:
        """Returns once the response streaming at (or after) the press is cancelled: the run itself goes on."""
        self.stop_pressed.set()
        await self.until(self.response_cancelled)

    async def stop_sync_abandon(self) -> None:
        """The caller stops waiting: the handler's thread is left to itself (close() cannot end it either)."""

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.response_cancelled.clear()
        self.entered.clear()
        self.handle = None
        history = self.history
        self.history = None
        # no messages kept (an abandoned handler still running, or nothing came back): the user asks again
        self.job = self._launch(None if history else self.ctx.prompt, history or None)
        await self.job


def _warm_up() -> None:
    """One in-process run (FunctionModel, one tool call) in the parent: what the first run of a process builds
    lazily (the agent graph, tool schemas, message types) otherwise took ~100 ms of CPU in each forked subject
    before its first model request; a long-lived app pays it once."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list[Any], _info: Any) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("noop", {})] if len(messages) == 1 else [TextPart("ok")])

    async def noop() -> str:
        """Do nothing."""
        return "ok"

    asyncio.run(Agent(FunctionModel(model), tools=[noop]).run("warm-up"))


ADAPTER = PydanticAIAdapter
