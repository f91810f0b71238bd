"""LlamaIndex Workflows: a `FunctionAgent` (llama-index-core's agent on llama-index-workflows), run and stopped the
way the docs show.

The agent is the one of the docs' agent tutorial (framework/understanding/agent): `FunctionAgent(tools=...,
llm=..., system_prompt=...)` streaming its events; the model is `OpenAILike` pointed at the world (the plain
`OpenAI` class refuses a model name it does not know). The job is the application's loop of the streaming docs,
`handler = agent.run(user_msg=...)`, `async for ev in handler.stream_events()`, then `await handler`; for
`task_cancel`, an asyncio task awaiting the handler.

Stop buttons, each returning when the application's call has returned or raised:
- cancel_run:  `await handler.cancel_run()` (workflows/handler.py; the run ends with `WorkflowCancelledByUser`).
- break:       leave the `stream_events()` loop at the next event.
- task_cancel: `task.cancel()` on the task awaiting the handler.
Then the application keeps `handler.ctx.to_dict(serializer=PickleSerializer())`, as the docs' "Stopping/Resuming
Between Human Responses" does (workflows docs, human_in_the_loop.md). Resume: `Context.from_dict(agent, saved)`
and `agent.run(ctx=restored)`, which continues a run that was still going (durable_workflows.md; llama_index docs
understanding/agent/state.md), else asks the next turn of the conversation kept in that context.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.contract.kit import NEXT_INPUT, KitAdapter, warm

# a model llama-index-llms-anthropic lists (llama_index/llms/anthropic/utils.py ANTHROPIC_MODELS): the world
# answers whatever model a request names
ANTHROPIC_LISTED_MODEL = "claude-sonnet-4-5"
# Gemini 2.5 Flash's input and output token limits (ai.google.dev/gemini-api/docs/models): what models.get reports
GEMINI_LIMITS = {"context_window": 1_048_576, "max_tokens": 65_536}


class LlamaIndexAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        """Import the framework, and what its first run would import or load (in a forked subject that took 1-2.4 s
        of CPU before the first event, so a `break` could not leave the loop; an app pays it once per process)."""
        import httpcore  # noqa: F401 (the openai client's transport)
        import llama_index.core.agent.workflow  # noqa: F401
        import llama_index.llms.anthropic  # noqa: F401
        import llama_index.llms.google_genai  # noqa: F401
        import llama_index.llms.openai_like  # noqa: F401
        import llama_index.tools.mcp  # noqa: F401
        import openai.resources  # noqa: F401 (imported by the openai client on its first request)
        import workflows.plugins.basic  # noqa: F401 (the default runtime, imported by the first run)
        warm("httpcore2", "jsonschema")
        import workflows.representation.validate  # noqa: F401
        import workflows.runtime.control_loop.runner  # noqa: F401
        from llama_index.core.utils import get_tokenizer

        get_tokenizer()  # what the agent's ChatMemoryBuffer loads on first use (tiktoken, the bundled cache)

    # --- the agent, built the documented way ------------------------------------------------------------------

    async def start(self) -> None:
        from llama_index.core.agent.workflow import FunctionAgent

        ctx = self.ctx
        self.agent = FunctionAgent(name="assistant", tools=await self._tools(), llm=self._llm(),
                                   system_prompt=ctx.system_prompt)
        self.saved: dict[str, Any] | None = None  # the Context the application keeps at the stop
        self.turns_usage: list[int | None] = []  # each finished model turn's output tokens, as its AgentOutput said
        self.job = self._launch(user_msg=ctx.prompt)

    def _llm(self) -> Any:
        """LlamaIndex's own LLM class for the trial's provider, at its defaults (README "Providers")."""
        ctx = self.ctx
        if ctx.provider == "anthropic":
            from llama_index.llms.anthropic import Anthropic

            # it refuses a model name it does not list (anthropic_modelname_to_contextsize): a listed one
            return self.model_client(Anthropic, model=ANTHROPIC_LISTED_MODEL)
        if ctx.provider == "gemini":
            from google.genai.types import HttpOptions
            from llama_index.llms.google_genai import GoogleGenAI

            # without both limits its constructor asks models.get, a route the world does not serve
            return GoogleGenAI(model=ctx.model_name, api_key=self.client_settings()["api_key"],
                               http_options=HttpOptions(base_url=ctx.model_base_url), **GEMINI_LIMITS)
        from llama_index.llms.openai_like import OpenAILike

        return self.model_client(OpenAILike, url="api_base", model=ctx.model_name, is_chat_model=True,
                                 is_function_calling_model=True)

    async def _tools(self) -> list[Any]:
        from llama_index.core.tools import FunctionTool

        ctx = self.ctx
        if ctx.tool_style == "mcp":
            from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

            params = ctx.mcp.params()
            client = BasicMCPClient(params["command"], args=params["args"], env=params["env"])
            return await McpToolSpec(client=client).to_tool_list_async()  # a server process per call
        # a sync function runs on the loop's default executor (run_in_executor, tools/function_tool.py)
        return [FunctionTool.from_defaults(fn) for fn in ctx.tools.values()]

    def _launch(self, **run_kwargs: Any) -> asyncio.Task:
        self.handler = self.agent.run(**run_kwargs)
        return asyncio.create_task(self._await() if self.mode == "task_cancel" else self._stream())

    async def _stream(self) -> None:
        """The streaming docs' loop: events as they come, then the result."""
        from llama_index.core.agent.workflow import AgentOutput

        async for event in self.handler.stream_events():
            if isinstance(event, AgentOutput):
                self.turns_usage.append(output_tokens(event.raw))
            if self.stop_pressed.is_set() and self.mode == "break":
                return  # the application stops reading; nothing else is pressed
        await self.handler  # after cancel_run: raises WorkflowCancelledByUser

    async def _await(self) -> None:
        await self.handler

    # --- the stop buttons -------------------------------------------------------------------------------------

    async def stop_cancel_run(self) -> None:
        await self.handler.cancel_run()
        await self.until_done()
        await self._save()

    async def stop_break(self) -> None:
        await self.flag_and_wait()  # the loop leaves at its next event
        await self._save()

    async def stop_task_cancel(self) -> None:
        await super().stop_task_cancel()
        await self._save()

    async def reported_usage(self) -> int | None:
        """The output tokens the run's finished turns reported in their `AgentOutput.raw` (the last streamed chunk
        of each model turn, the provider's usage in it), summed over what the application read; None when no turn
        reported any (the openai stream's chunks carry no usage by default; task_cancel reads no events)."""
        known = [tokens for tokens in self.turns_usage if tokens is not None]
        return sum(known) if known else None

    async def _save(self) -> None:
        """What the application keeps to resume: the serialized Context, as if written to a database (Pickle:
        the JsonSerializer drops the agent's ChatMemoryBuffer, and a resumed run then fails without it)."""
        from workflows.context import PickleSerializer

        self.saved = json.loads(json.dumps(self.handler.ctx.to_dict(serializer=PickleSerializer())))

    # --- resume (close: KitAdapter's; MCP: BasicMCPClient opens a session, a server process, per call) ----------

    async def resume(self) -> None:
        from workflows import Context
        from workflows.context import PickleSerializer

        if self.saved is None:
            raise RuntimeError("no Context was saved at the stop")
        restored = Context.from_dict(self.agent, self.saved, serializer=PickleSerializer())
        self.stop_pressed.clear()
        # a run that was still going continues from its saved state; one that had ended gets the next turn
        self.job = self._launch(ctx=restored) if restored.is_running else \
            self._launch(ctx=restored, user_msg=NEXT_INPUT)
        await self.job


class LlamaIndexChatHistoryAdapter(LlamaIndexAdapter):
    """The simple resume path: a new run with the conversation the stopped run's memory holds, and the next input.

    Run it with `stopbench run --adapter adapters.llamaindex.adapter:LlamaIndexChatHistoryAdapter`.
    """


    async def _save(self) -> None:
        memory = await self.handler.ctx.store.get("memory", default=None)  # set by the run's first step
        self.history = list(await memory.aget_all()) if memory is not None else []  # as it was at the stop

    async def resume(self) -> None:
        from llama_index.core.llms import ChatMessage

        # the user's message is in the application's transcript even when the run stopped before recording it
        history = getattr(self, "history", None) or [ChatMessage(role="user", content=self.ctx.prompt)]
        self.stop_pressed.clear()
        self.job = self._launch(user_msg=NEXT_INPUT, chat_history=history)
        await self.job


def output_tokens(raw: Any) -> int | None:
    """A turn's output tokens from its last chunk's raw response: Anthropic's `message_delta` carries `usage`
    (llama_index/llms/anthropic/base.py), Gemini's chunk `usage_metadata` (llama_index/llms/google_genai/utils.py),
    an openai chunk `usage` only when asked for (`stream_options`)."""
    if not isinstance(raw, dict):
        return None
    gemini = raw.get("usage_metadata")
    if isinstance(gemini, dict):
        return gemini.get("candidates_token_count")
    usage = raw.get("usage")
    if isinstance(usage, dict):
        return usage.get("output_tokens", usage.get("completion_tokens"))
    return getattr(usage, "output_tokens", getattr(usage, "completion_tokens", None))


ADAPTER = LlamaIndexAdapter
