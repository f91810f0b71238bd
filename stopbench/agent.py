"""Your agent as a stopbench adapter: a callable given the trial's URLs, tools and stop button."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.contract.adapter import Adapter
from harness.contract.kit import in_own_thread, until_done

#: how the trial presses your agent's stop button
STOP_MODES = {
    "event": "set ctx.stop_requested and return at once (a button that only signals: the agent must notice)",
    "wait": "set ctx.stop_requested and return when the agent has returned (a button that says stopped when it is)",
    "cancel": "set ctx.stop_requested, cancel the asyncio task running the agent and wait for it to end",
}


@dataclass
class AgentContext:
    """What your agent gets for one trial."""

    model_base_url: str  #: an OpenAI-compatible base URL (Chat Completions and Responses), scripted by the scenario
    model_name: str
    services_base_url: str  #: the world's email / PR / calendar / chat services (docs/world-api.md)
    prompt: str  #: the scenario's user prompt
    system_prompt: str
    tools: dict[str, Callable[..., Any]]  #: the scenario's tools, sync or async (`tool_style`), by name
    tool_style: str
    workdir: Path  #: a folder of this trial's, for your agent's state (checkpoints, sessions)
    stop_requested: threading.Event = field(default_factory=threading.Event)  #: set when stop is pressed


def agent_adapter(agent: Callable[[AgentContext], Any], name: str | None = None) -> type[Adapter]:
    """An Adapter class that runs `agent(ctx)`: a coroutine function on the trial's loop, a plain function on a
    thread of its own (as a web server's request thread would run it). Its stop modes are STOP_MODES."""
    if not callable(agent):
        raise TypeError(f"agent must be a callable taking an AgentContext, got {agent!r}")
    is_async = inspect.iscoroutinefunction(agent)
    label = name or getattr(agent, "__name__", "agent").replace("_", "-")

    class CallableAgent(Adapter):
        """`agent` under test; `stop_event` / `stop_cancel` are the buttons."""

        stop_modes = STOP_MODES
        runs_declared_tools = True
        unsupported = {} if is_async else {("cancel", style): "a sync agent runs on a thread: no task to cancel"
                                           for style in ("sync", "async", "mcp")}

        async def start(self) -> None:
            c = self.ctx
            self.agent_ctx = AgentContext(
                model_base_url=c.model_base_url, model_name=c.model_name, services_base_url=c.services_base_url,
                prompt=c.prompt, system_prompt=c.system_prompt, tools=c.tools, tool_style=c.tool_style,
                workdir=c.workdir)
            self.job: asyncio.Future[Any] = (asyncio.ensure_future(agent(self.agent_ctx)) if is_async
                                        else in_own_thread(agent, self.agent_ctx, name=f"{label}-agent"))

        async def stop_event(self) -> None:
            self.agent_ctx.stop_requested.set()

        async def stop_wait(self) -> None:
            self.agent_ctx.stop_requested.set()
            await until_done(self.job)

        async def stop_cancel(self) -> None:
            self.agent_ctx.stop_requested.set()
            self.job.cancel()
            await until_done(self.job)

        async def wait(self) -> None:
            await self.job

        async def close(self) -> None:
            pass

    CallableAgent.name = label
    CallableAgent.__qualname__ = CallableAgent.__name__ = f"CallableAgent[{label}]"
    return CallableAgent
