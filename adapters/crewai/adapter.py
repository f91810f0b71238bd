"""CrewAI: one Agent with the five tools, one Task whose description is the prompt, a Crew with
checkpointing on, the native OpenAI provider (no litellm), and every stop button a CrewAI user has.

CrewAI has no cancel method. The stop modes are what its users do instead:
- abandon:              `crew.kickoff()` on a worker thread; the caller stops waiting (a web UI's stop).
- cancel_kickoff_async: cancel the asyncio task awaiting `crew.kickoff_async()` (= to_thread(kickoff)).
- cancel_akickoff:      cancel the asyncio task awaiting `crew.akickoff()` (native async).
- stream_close:         `Crew(stream=True)`; the consumer leaves its chunk loop at the next chunk and calls
                        `close()` (sync consumer on a worker thread) / `aclose()` (async consumer).
- callback_flag:        the article's workaround: `Crew(step_callback=...)` raises once a cancel flag is set.
- hook_abort:           a `before_llm_call` hook raises `crewai.hooks.HookAborted` once the flag is set.
Modes that do not fix the entry point (stream_close, callback_flag, hook_abort) run the way sync user
code does (`kickoff()` on a worker thread) with sync and MCP tools, and with `akickoff()` with async tools.

Resume: `Crew.from_checkpoint(CheckpointConfig(restore_from=<newest checkpoint>))`, then the same entry
point again (checkpoints asked for on task_started / llm_call_completed / tool_usage_finished /
task_completed, under the trial folder). Set STOPBENCH_CREWAI_RESUME=rerun to measure the other path a
user has: the same Crew object run again.
"""

from __future__ import annotations

import asyncio
import glob
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, create_model

from harness.contract.adapter import Adapter, TrialContext, in_own_thread
from harness.tools.catalogue import TOOL_SPECS
from harness.tools.toolbox import Toolbox

# task_started is the one mid-task point a crew checkpoints: llm_call_completed and tool_usage_finished (the
# docs' fine-grained events) have the LLM and the agent executor as their source, and the checkpoint listener
# finds no CheckpointConfig on either, so they write nothing
CHECKPOINT_EVENTS = ["task_started", "llm_call_completed", "tool_usage_finished", "task_completed"]
RESUME_PATH = os.environ.get("STOPBENCH_CREWAI_RESUME", "checkpoint")  # checkpoint | rerun

# run id -> the run's toolbox: tools stay plain module-level BaseTool subclasses (a checkpoint stores
# them by class and fields, and restores them), and find the trial's toolbox through this registry
_TOOLBOXES: dict[str, Toolbox] = {}

# one args model per tool, module-level so a checkpoint can name it
_ARGS: dict[str, type[BaseModel]] = {
    name: create_model(f"{name}_args", **{p: (str, Field(description=d)) for p, d in params.items()})
    for name, (_, params, _) in TOOL_SPECS.items()
}


# Telemetry, tracking, tracing and the version check off before crewai is imported: this module imports
# it (the tools below are module-level BaseTool subclasses, which is what checkpoints need).
ENVIRONMENT = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    # resume restores the crew's step_callback from our own checkpoint (trusted data, in the trial folder);
    # without this CrewAI refuses to resolve the callback's path and the restore fails
    "CREWAI_DESERIALIZE_CALLBACKS": "1",
}
for _k, _v in ENVIRONMENT.items():
    os.environ.setdefault(_k, _v)

from crewai.tools import BaseTool  # noqa: E402


class WorldTool(BaseTool):
    """A sync tool: `_run` calls the trial's sync tool function (CrewAI runs it on its own threads)."""

    run_id: str

    def _run(self, **kwargs: Any) -> str:
        return _TOOLBOXES[self.run_id].sync[self.name](**kwargs)


class AsyncWorldTool(BaseTool):
    """An async tool: `_arun` awaits the trial's async tool function. `_run` is CrewAI's documented async
    tool form (an `async def _run`, whose coroutine `BaseTool.run` drives): a crew's agent executor calls
    `tool.run`, never `arun`, also under `akickoff()`."""

    run_id: str

    async def _arun(self, **kwargs: Any) -> str:
        return await _TOOLBOXES[self.run_id].async_[self.name](**kwargs)

    async def _run(self, **kwargs: Any) -> str:  # type: ignore[override]
        return await self._arun(**kwargs)


class CrewStopped(Exception):
    """Raised by the step callback once the user pressed stop (the article's cooperative flag)."""


# The cancel flag. CrewAI checkpoints callbacks as references to module-level named functions (a bound
# method "will prevent checkpointing"), so the callback, the hook and their flag live here (one trial
# per process).
CANCEL = threading.Event()


def raise_if_cancelled(step: Any) -> None:
    """Crew(step_callback=...): the article's workaround."""
    if CANCEL.is_set():
        raise CrewStopped("the user pressed stop")


def abort_llm_call_if_cancelled(context: Any) -> None:
    """A before_llm_call hook: HookAborted is CrewAI's documented way for a hook to stop the operation."""
    from crewai.hooks import HookAborted

    if CANCEL.is_set():
        raise HookAborted("the user pressed stop")


class CrewAIAdapter(Adapter):
    name = "crewai"
    stop_modes = {
        "abandon": "crew.kickoff() on a worker thread; the caller stops waiting for it (a web UI's stop)",
        "cancel_kickoff_async": "cancel the asyncio task awaiting crew.kickoff_async() (asyncio.to_thread(kickoff))",
        "cancel_akickoff": "cancel the asyncio task awaiting crew.akickoff() (native async)",
        "stream_close": "Crew(stream=True): the consumer leaves its chunk loop and calls close() (sync) / "
                        "aclose() (async)",
        "callback_flag": "a cancel flag checked in Crew(step_callback=...), raising once it is set",
        "hook_abort": "a before_llm_call hook raising crewai.hooks.HookAborted once the flag is set",
    }
    resume_primitive = ("Crew.from_checkpoint(CheckpointConfig(restore_from=<newest checkpoint>)), kicked off "
                        "again (STOPBENCH_CREWAI_RESUME=rerun: the same Crew kicked off again)")
    environment = ENVIRONMENT
    packages = ("crewai", "crewai-tools", "mcpadapt", "openai", "mcp")

    @classmethod
    def prepare(cls) -> None:
        import crewai  # noqa: F401
        import crewai.hooks  # noqa: F401
        import crewai.llms.providers.openai.completion  # noqa: F401
        import crewai.state.checkpoint_listener  # noqa: F401
        import crewai_tools.adapters.mcp_adapter  # noqa: F401

    # --- the crew, built the documented way -----------------------------------------------------------

    def _tools(self) -> list:
        ctx = self.ctx
        if ctx.tool_style == "mcp":
            from crewai_tools import MCPServerAdapter
            from mcp import StdioServerParameters

            params = StdioServerParameters(command=ctx.mcp_command[0], args=ctx.mcp_command[1:], env=ctx.env)
            self.mcp = MCPServerAdapter(params)  # starts the server; stopped in close()
            return list(self.mcp.tools)
        cls = WorldTool if ctx.tool_style == "sync" else AsyncWorldTool
        return [cls(name=name, description=spec[2], args_schema=_ARGS[name], run_id=ctx.run_id)
                for name, spec in TOOL_SPECS.items()]

    def _crew(self, tools: list):
        from crewai import LLM, Agent, CheckpointConfig, Crew, Task

        ctx = self.ctx
        llm = LLM(model=f"openai/{ctx.model_name}", base_url=ctx.model_base_url, api_key="x", max_retries=0)
        agent = Agent(role="Assistant", goal=ctx.system_prompt, backstory="You work for the user.",
                      llm=llm, tools=tools, allow_delegation=False)
        task = Task(description=ctx.prompt, expected_output="The job done, then a short summary of it.",
                    agent=agent)
        return Crew(
            agents=[agent], tasks=[task],
            checkpoint=CheckpointConfig(location=str(self.checkpoints), on_events=CHECKPOINT_EVENTS),
            stream=self.mode == "stream_close",
            step_callback=raise_if_cancelled if self.mode == "callback_flag" else None,
        )

    # --- lifecycle ------------------------------------------------------------------------------------

    async def start(self, ctx: TrialContext) -> None:
        os.environ["CREWAI_STORAGE_DIR"] = str(ctx.workdir / "crewai")
        self.ctx = ctx
        self.mode = ctx.mode
        self.checkpoints = ctx.workdir / "crewai-checkpoints"
        CANCEL.clear()
        self.mcp = None
        self.hook = None
        _TOOLBOXES[ctx.run_id] = ctx.tools
        if self.mode == "abandon":
            self.entry = "thread"
        elif self.mode == "cancel_kickoff_async":
            self.entry = "kickoff_async"
        elif self.mode == "cancel_akickoff" or ctx.tool_style == "async":
            self.entry = "akickoff"
        else:
            self.entry = "thread"
        if self.mode == "hook_abort":
            from crewai.hooks import register_before_llm_call_hook

            self.hook = abort_llm_call_if_cancelled
            register_before_llm_call_hook(self.hook)
        self.crew = self._crew(self._tools())
        self.job = self._begin(self.crew)

    def _begin(self, crew: Any) -> asyncio.Future:
        if self.entry == "thread":
            return in_own_thread(self._sync_caller, crew, name="crewai-kickoff")
        return asyncio.create_task(self._async_caller(crew))

    def _sync_caller(self, crew: Any) -> Any:
        """Sync user code: kickoff(); a streaming crew is consumed chunk by chunk until stop, then close()."""
        from crewai.types.streaming import CrewStreamingOutput

        out = crew.kickoff()
        if isinstance(out, CrewStreamingOutput):
            for _chunk in out:
                if CANCEL.is_set():
                    break
            out.close()
        return out

    async def _async_caller(self, crew: Any) -> Any:
        from crewai.types.streaming import CrewStreamingOutput

        out = await (crew.kickoff_async() if self.entry == "kickoff_async" else crew.akickoff())
        if isinstance(out, CrewStreamingOutput):
            async for _chunk in out:
                if CANCEL.is_set():
                    break
            await out.aclose()
        return out

    async def stop(self, mode: str) -> None:
        if mode == "abandon":
            return  # the caller stops waiting: nothing is pressed in the framework
        if mode in ("cancel_kickoff_async", "cancel_akickoff"):
            self.job.cancel()
        else:  # stream_close: the consumer closes at the next chunk; callback_flag / hook_abort: the flag
            CANCEL.set()
        await asyncio.wait({self.job})  # the framework says it has stopped when its kickoff call has ended

    async def wait(self) -> None:
        await self.job

    async def resume(self) -> None:
        CANCEL.clear()
        if RESUME_PATH == "rerun":
            crew = self.crew
        else:
            from crewai import CheckpointConfig, Crew

            crew = Crew.from_checkpoint(CheckpointConfig(restore_from=_newest_checkpoint(self.checkpoints)))
        self.job = self._begin(crew)
        await self.job

    async def close(self) -> None:
        if self.hook is not None:
            from crewai.hooks import unregister_before_llm_call_hook

            unregister_before_llm_call_hook(self.hook)
            self.hook = None
        if self.mcp is not None:
            self.mcp.stop()
            self.mcp = None
        _TOOLBOXES.pop(self.ctx.run_id, None)


def _newest_checkpoint(location: Path) -> str:
    """The checkpoint `crewai checkpoint resume` would pick: the newest JSON file under the location."""
    files = glob.glob(os.path.join(glob.escape(str(location)), "**", "*.json"), recursive=True)
    if not files:
        raise FileNotFoundError(f"no CrewAI checkpoint was written under {location} before the stop")
    return max(files, key=os.path.getmtime)


ADAPTER = CrewAIAdapter
