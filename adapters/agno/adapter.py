"""Agno (agno 3.1): a plain `Agent` with the scenario's tools on a SqliteDb session, stopped the way the docs show.

docs.agno.com "Cancelling a Run": `agent.cancel_run(run_id)` / `acancel_run(run_id)` marks the run in the process's
cancellation manager (the default in-memory one, agno/run/cancel.py); the run stops at its next cooperative check,
ending streamed runs with a `RunEvent.run_cancelled` event. Buttons:
- cancel_run:   `await agent.acancel_run(run_id)` on a streamed `agent.arun(..., stream=True)`.
- sync_cancel:  the docs' example: a sync `agent.run(..., stream=True)` on a thread of its own (a sync handler),
                `agent.cancel_run(run_id)` from the event loop's thread.
- sync_abandon: the same sync run; the caller stops waiting for it.
- break:        leave the stream loop at its next event.
- task_cancel:  `task.cancel()` on the task awaiting a non-streamed `agent.arun(...)`.
- confirm:      human in the loop (docs "User Confirmation"): the side-effect tools `requires_confirmation`; the
                app confirms each pause (`acontinue_run`) until the stop, then leaves the run paused.
Resume: the next user message on the same session (history in context); after `confirm`, the paused run continued
with its requirements confirmed. `AgnoTeamAdapter`: cancel_run and task_cancel on a `Team` of one member agent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.contract.kit import API_KEY, NEXT_INPUT, Flag, KitAdapter, OwnedContext, in_own_thread, warm
from harness.tools.catalogue import TOOL_KIND

SYNC = ("sync_cancel", "sync_abandon")


class AgnoAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import agno.agent  # noqa: F401
        import agno.db.sqlite  # noqa: F401
        import agno.models.anthropic  # noqa: F401
        import agno.models.google  # noqa: F401
        import agno.models.openai  # noqa: F401
        import agno.team  # noqa: F401
        import agno.tools.mcp  # noqa: F401
        warm("fastmcp.client", "openai.resources.chat.chat", "httpcore2", "jsonschema")

    async def start(self) -> None:
        self.run_id: str | None = None
        self.started = Flag()  # the run's first event (its run_id) has been read, on the loop or a handler's thread
        self.paused: Any = None  # confirm: the run the stop left paused at a confirmation
        self.agent = self._runner(await self._tools())
        self.job = self._launch(self.ctx.prompt)

    async def _tools(self) -> list[Any]:
        """The scenario's tools; in `confirm` mode every side-effect tool requires the user's confirmation."""
        confirm = self.mode == "confirm"
        if self.ctx.tool_style == "mcp":  # connect() / close() held by one task, as the docs' lifecycle
            from agno.tools.mcp import MCPTools
            from mcp import StdioServerParameters

            params = StdioServerParameters(**self.ctx.mcp.params())
            gated = list(TOOL_KIND) if confirm else []
            self.mcp = await OwnedContext.open(lambda: MCPTools(server_params=params,
                                                                requires_confirmation_tools=gated))
            self.on_close(self.mcp.close)
            return [self.mcp.value]
        if not confirm:
            return list(self.ctx.tools.values())
        from agno.tools import tool

        return [tool(name=name, requires_confirmation=True)(fn) if name in TOOL_KIND else fn
                for name, fn in self.ctx.tools.items()]

    def _model(self) -> Any:
        """agno's own model class for the trial's provider, each at its client's defaults (README "Providers")."""
        ctx = self.ctx
        if ctx.provider == "anthropic":  # Claude takes no base_url of its own: the SDK's, through client_params
            from agno.models.anthropic import Claude

            return Claude(id=ctx.model_name, api_key=API_KEY, client_params={"base_url": ctx.model_base_url})
        if ctx.provider == "gemini":  # Gemini hands client_params to genai.Client: the base URL in its http_options
            from agno.models.google import Gemini

            return Gemini(id=ctx.model_name, api_key=API_KEY,
                          client_params={"http_options": {"base_url": ctx.model_base_url}})
        from agno.models.openai import OpenAIChat

        return OpenAIChat(id=ctx.model_name, base_url=ctx.model_base_url, api_key=API_KEY)

    def _db(self) -> Any:
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=str(self.ctx.workdir / "agno.db"))

    def _runner(self, tools: list[Any]) -> Any:
        """What the user runs and cancels: here the agent itself."""
        from agno.agent import Agent

        return Agent(model=self._model(), tools=tools, instructions=self.ctx.system_prompt, telemetry=False,
                     db=self._db(), add_history_to_context=True, session_id=self.ctx.run_id)

    # --- the jobs ------------------------------------------------------------------------------------------

    def _button(self) -> str:
        """The stop button pressed: the mode."""
        return self.mode

    def _launch(self, message: str) -> asyncio.Future:
        button = self._button()
        if button in SYNC:
            return in_own_thread(self._stream_sync, message, name="agno-sync-handler")
        if button == "task_cancel":
            return asyncio.create_task(self.agent.arun(message))
        if button == "confirm":
            return asyncio.create_task(self._confirming(self.agent.arun(message)))
        return asyncio.create_task(self._stream(message))

    def _seen(self, event: Any) -> None:
        if self.run_id is None and getattr(event, "run_id", None):
            self.run_id = event.run_id
            self.started.set()

    async def _stream(self, message: str) -> None:
        async for event in self.agent.arun(message, stream=True):
            self._seen(event)
            if self._button() == "break" and self.stop_pressed.is_set():
                break

    def _stream_sync(self, message: str) -> None:
        """A sync handler: the docs' `for chunk in agent.run(..., stream=True)` loop."""
        for event in self.agent.run(message, stream=True):
            self._seen(event)

    async def _confirming(self, first: Any) -> None:
        """The docs' confirmation loop: confirm every pending tool and continue, until the user presses stop."""
        run = await first
        while run.is_paused and not self.stop_pressed.is_set():
            run = await self.agent.acontinue_run(run_id=run.run_id, requirements=_confirmed(run))
        self.paused = run if run.is_paused else None

    # --- the stop buttons (task_cancel: KitAdapter's) --------------------------------------------------------

    async def stop_cancel_run(self) -> None:
        await self.until(self.started)
        if self.run_id is not None:
            await self.agent.acancel_run(self.run_id)
        await self.until_done()

    async def stop_sync_cancel(self) -> None:
        """`cancel_run` from the event loop's thread: "another thread" of the docs' example."""
        await self.until(self.started)
        if self.run_id is not None:
            self.agent.cancel_run(self.run_id)
        await self.until_done()

    async def stop_sync_abandon(self) -> None:
        """The caller stops waiting: the handler's thread is left to itself."""

    stop_break = KitAdapter.flag_and_wait  # the loop leaves at its next event
    stop_confirm = KitAdapter.flag_and_wait  # the run ends at its next confirmation (or at its end)

    async def reported_usage(self) -> int | None:
        """The output tokens of the session's last run as agno recorded it (`RunOutput.metrics`, read back from the
        SqliteDb with `aget_last_run_output`): what agno's own accounting says the stopped run used."""
        run = await self.agent.aget_last_run_output(session_id=self.ctx.run_id)
        if run is None or run.metrics is None:
            return None
        return run.metrics.output_tokens

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.started.clear()
        self.run_id = None
        if self.paused is not None:
            paused, self.paused = self.paused, None
            self.job = asyncio.create_task(self._confirming(
                self.agent.acontinue_run(run_id=paused.run_id, requirements=_confirmed(paused))))
        else:
            self.job = self._launch(NEXT_INPUT)
        await self.job


class AgnoTeamAdapter(AgnoAdapter):
    """The agent's buttons on a `Team` (docs "Teams") of one member agent; its modes are named `team_<button>` so
    that the rows and the claims tell them from the agent's. The scenario's tools are the team's own
    (`Team(tools=...)`): the world's scripted model calls them by name, so the team leader's run loop does the job
    and the member is never delegated to; what is measured is the team run and its cancel."""

    def _button(self) -> str:
        return self.mode.removeprefix("team_")

    stop_team_cancel_run = AgnoAdapter.stop_cancel_run
    stop_team_task_cancel = KitAdapter.stop_task_cancel

    def _runner(self, tools: list[Any]) -> Any:
        from agno.agent import Agent
        from agno.team import Team

        member = Agent(name="writer", model=self._model(), instructions=self.ctx.system_prompt, telemetry=False)
        return Team(members=[member], model=self._model(), tools=tools, instructions=self.ctx.system_prompt,
                    telemetry=False, db=self._db(), add_history_to_context=True, session_id=self.ctx.run_id)


def _confirmed(run: Any) -> list[Any]:
    """The user confirms every tool call the run is paused at (docs "User Confirmation")."""
    for requirement in run.active_requirements:
        if requirement.needs_confirmation:
            requirement.confirm()
    return run.requirements


ADAPTER = AgnoAdapter
