"""Google ADK: the documented `LlmAgent` on an `App`, a `Runner` over a `DatabaseSessionService` (SQLite in the trial
folder), the model ADK ships for the trial's provider (`Gemini` on a google-genai client: ADK's home; `OpenAILlm` on
an AsyncOpenAI client; `AnthropicLlm` on an AsyncAnthropic client), streamed as a chat UI streams it
(`StreamingMode.SSE`), and the stop buttons ADK users press (issue #4796's table, and what 2.x added since):
leaving the `run_async` loop (`break`, `aclose`), cancelling its task, `abort_signal`, `end_invocation` from
callbacks, and the sync `runner.run()` generator closed or abandoned by a handler thread. Resume: `run_async` again
on the same session with the next message; the resumable variant resumes the stopped invocation by its id.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from harness.contract.kit import API_KEY, NEXT_INPUT, KitAdapter, in_own_thread, until_done

APP, USER = "stopbench", "user"
STOPPED = "Stopped by the user."
SYNC = ("sync_close", "sync_abandon")
WARM = ("google.adk.agents.llm_agent", "google.adk.apps.app", "google.adk.runners",
        "google.adk.flows.llm_flows.auto_flow", "google.adk.workflow._node_runner_utils",
        "google.adk.workflow._llm_agent_wrapper", "google.adk.sessions.database_session_service",
        "google.adk.tools.mcp_tool", "openai.resources.chat", "sqlalchemy.dialects.sqlite.aiosqlite", "aiosqlite",
        "jsonschema", "google.adk.models.google_llm", "google.adk.models.anthropic_llm", "anthropic.resources.messages")


class GoogleAdkAdapter(KitAdapter):
    #: the variant below: App(resumability_config=...) and resume by invocation_id
    resumable = False

    @classmethod
    def prepare(cls) -> None:
        """Import in the parent what a warm app has imported: ADK pulls its flow and workflow runtime in on the first
        invocation, and AsyncOpenAI(...).chat all of openai.resources (~1.5 s of CPU on the loop mid first turn)."""
        for module in WARM:
            importlib.import_module(module)
        # and OpenAILlm's module, through the name every release exports: google.adk.models.OpenAILlm is defined in
        # google.adk.labs.openai up to 2.9, in google.adk.integrations.openai from 2.10 (labs.openai an alias since)
        from google.adk.models import OpenAILlm  # noqa: F401

    async def start(self) -> None:
        from google.adk.apps import App, ResumabilityConfig
        from google.adk.runners import Runner
        from google.adk.sessions import DatabaseSessionService

        ctx = self.ctx
        self.model = self._model()
        self.sessions = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{ctx.workdir / 'adk-sessions.db'}")
        self.on_close(self.sessions.close)
        await self.sessions.create_session(app_name=APP, user_id=USER, session_id=ctx.run_id)
        resumability = ResumabilityConfig(is_resumable=True) if self.resumable else None
        app = App(name=APP, root_agent=self._agent(), resumability_config=resumability)
        self.runner = Runner(app=app, session_service=self.sessions)
        self.on_close(self.runner.close)  # closes the toolsets (the MCP server) of the agent tree
        self.abandoned: Any = None  # sync_abandon: the generator the handler stopped reading
        self.on_close(self._close_abandoned)
        self.job = self._launch(ctx.prompt)

    def _agent(self) -> Any:
        from google.adk.agents import LlmAgent

        callbacks = {"before_model_callback": self._before_model, "before_tool_callback": self._before_tool} \
            if self.mode == "end_invocation" else {}
        return LlmAgent(name="assistant", model=self.model, instruction=self.ctx.system_prompt, tools=self._tools(),
                        **callbacks)

    def _model(self) -> Any:
        """The model class ADK ships for the trial's provider, on a client of that provider's SDK made with the
        world's base URL and left at its defaults. The client is ours to close: Runner.close() closes no model
        client."""
        name = self.ctx.model_name
        if self.ctx.provider == "gemini":
            from google import genai
            from google.adk.models import Gemini
            from google.genai import types

            client = genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=self.ctx.model_base_url))
            self.on_close(client.close)
            self.on_close(client.aio.aclose)  # on_close runs last-registered first: the async client, then sync
            return Gemini(model=name, client=client)
        if self.ctx.provider == "anthropic":
            from anthropic import AsyncAnthropic
            from google.adk.models.anthropic_llm import AnthropicLlm

            anthropic_client = self.model_client(AsyncAnthropic)
            self.on_close(anthropic_client.close)
            return AnthropicLlm(model=name, client=anthropic_client)
        from google.adk.models import OpenAILlm
        from openai import AsyncOpenAI

        openai_client = self.model_client(AsyncOpenAI)
        self.on_close(openai_client.close)
        return OpenAILlm(model=name, client=openai_client)

    def _tools(self) -> list:
        if self.ctx.tool_style != "mcp":
            return list(self.ctx.tools.values())  # ADK wraps plain functions in FunctionTool
        from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
        from mcp import StdioServerParameters

        return [McpToolset(connection_params=StdioConnectionParams(server_params=StdioServerParameters(
            **self.ctx.mcp.params())))]

    # --- the cooperative stop: ADK's callbacks --------------------------------------------------------

    def _before_model(self, callback_context: Any, llm_request: Any) -> Any:
        from google.adk.models import LlmResponse
        from google.genai import types

        if not self.stop_pressed.is_set():
            return None
        callback_context._invocation_context.end_invocation = True
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=STOPPED)]))

    def _before_tool(self, tool: Any, args: dict[str, Any], tool_context: Any) -> dict | None:
        if not self.stop_pressed.is_set():
            return None
        tool_context._invocation_context.end_invocation = True
        return {"error": STOPPED}

    # --- the job ----------------------------------------------------------------------------------------

    def _message(self, text: str) -> Any:
        from google.genai import types

        return types.Content(role="user", parts=[types.Part(text=text)])

    def _run_config(self) -> Any:
        from google.adk.agents.run_config import RunConfig, StreamingMode

        return RunConfig(streaming_mode=StreamingMode.SSE)

    def _launch(self, text: str | None, invocation_id: str | None = None) -> asyncio.Future:
        kwargs = {"user_id": USER, "session_id": self.ctx.run_id, "run_config": self._run_config(),
                  "new_message": self._message(text) if text else None, "invocation_id": invocation_id}
        if self.mode in SYNC:
            del kwargs["invocation_id"]
            return in_own_thread(self._sync_handler, kwargs, name="adk-sync-handler")
        if self.mode == "abort_signal":
            self.abort = asyncio.Event()
            kwargs["abort_signal"] = self.abort
        return asyncio.create_task(self._consume(kwargs))

    async def _consume(self, kwargs: dict[str, Any]) -> None:
        if self.mode == "aclose":
            events = self.runner.run_async(**kwargs)
            async for _ in events:
                if self.stop_pressed.is_set():
                    break
            await events.aclose()
            return
        async for _ in self.runner.run_async(**kwargs):  # no other reference: dropped at `break`
            if self.mode == "break" and self.stop_pressed.is_set():
                break

    def _sync_handler(self, kwargs: dict[str, Any]) -> None:
        """A sync web handler: stream `runner.run(...)`, leave when the user presses stop."""
        events = self.runner.run(**kwargs)
        for _ in events:
            if self.stop_pressed.is_set():
                break
        if self.mode == "sync_abandon" and self.stop_pressed.is_set():
            self.abandoned = events  # never read or closed again by the handler
        else:
            events.close()

    # --- the stop buttons: each returns when the loop that reads the events has ended ---------------------

    # break, aclose, the sync modes: the loop leaves at its next event; end_invocation: the callbacks end it
    stop_break = stop_aclose = stop_sync_close = stop_sync_abandon = stop_end_invocation = KitAdapter.flag_and_wait

    async def stop_abort_signal(self) -> None:
        self.abort.set()
        await self.until_done()

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.job = self._launch(NEXT_INPUT)
        await self.job

    async def reported_usage(self) -> int | None:
        """What ADK recorded: the `usage_metadata.candidates_token_count` of the session's events (the model's
        answers ADK saved; a turn cut off before its final event saved none), None when no event carries usage."""
        session = await self.sessions.get_session(app_name=APP, user_id=USER, session_id=self.ctx.run_id)
        counts = [e.usage_metadata.candidates_token_count for e in (session.events if session else [])
                  if e.usage_metadata and e.usage_metadata.candidates_token_count is not None]
        return sum(counts) if counts else None

    async def _close_abandoned(self) -> None:
        if self.abandoned is not None:  # the app shuts down: the handler's generator is closed at last
            await until_done(in_own_thread(self.abandoned.close, name="adk-close"))


class GoogleAdkResumableAdapter(GoogleAdkAdapter):
    """The same app made resumable (docs: runtime/resume), resumed by the stopped invocation's id. The sync
    `runner.run(...)` takes no invocation_id, so its modes are left out.

    Run it with `stopbench run --adapter adapters.google_adk.adapter:GoogleAdkResumableAdapter`.
    """

    resumable = True

    async def resume(self) -> None:
        session = await self.sessions.get_session(app_name=APP, user_id=USER, session_id=self.ctx.run_id)
        invocation_id = session.events[-1].invocation_id if session and session.events else None
        self.stop_pressed.clear()
        self.job = self._launch(None if invocation_id else self.ctx.prompt, invocation_id)
        await self.job


ADAPTER = GoogleAdkAdapter
