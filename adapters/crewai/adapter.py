"""CrewAI: one Agent with the five tools, one Task whose description is the prompt, a Crew with checkpointing
on (CHECKPOINT_EVENTS, under the trial folder), the native OpenAI provider (no litellm), and every stop button
a CrewAI user has: CrewAI has no cancel method, the stop modes are what its users do instead.
"""

from __future__ import annotations

import asyncio
import glob
import os
from typing import Any

from crewai import LLM, Agent, Crew, Task
from crewai.hooks import register_before_llm_call_hook, unregister_before_llm_call_hook
from crewai.tools import BaseTool
from crewai.types.streaming import CrewStreamingOutput
from pydantic import BaseModel, Field, create_model

from harness.contract.adapter import NoResume, package_versions
from harness.contract.kit import Flag, KitAdapter, in_own_thread, warm
from harness.frameworks import release_key
from harness.tools.catalogue import TOOL_SPECS

# crewai routes `openai/<any model>` with a base_url to its native OpenAI client from 1.15.3; before, a model name not
# in its list of OpenAI models goes to LiteLLM (not installed here) unless the provider is named, as its docs then
# showed for an OpenAI-compatible endpoint: LLM(model=..., provider="openai", base_url=...)
NAMED_PROVIDER = release_key(package_versions(("crewai",))["crewai"]) < (1, 15, 3)

try:  # checkpoints came in crewai 1.14: an older release has no resume from them (framework.toml, README)
    from crewai import CheckpointConfig
except ImportError:
    CheckpointConfig = None

# task_started is the one mid-task point a crew checkpoints: the docs' fine-grained llm_call_completed and
# tool_usage_finished come from the LLM and the executor, where the listener finds no CheckpointConfig
CHECKPOINT_EVENTS = ["task_started", "llm_call_completed", "tool_usage_finished", "task_completed"]
# the modes that fix the entry point; the others as user code: kickoff() on a thread (sync, MCP), akickoff() (async)
ENTRY = {"abandon": "thread", "cancel_kickoff_async": "kickoff_async", "cancel_akickoff": "akickoff"}
# run id -> ctx.tools, looked up by the tools: module-level BaseTool subclasses, which checkpoints restore
_TOOLS: dict[str, dict[str, Any]] = {}
# one args model per tool, module-level so a checkpoint can name it
_ARGS: dict[str, type[BaseModel]] = {
    name: create_model(f"{name}_args", **{p: (str, Field(description=d)) for p, d in params.items()})
    for name, (_, params, _) in TOOL_SPECS.items()
}


class WorldTool(BaseTool):
    """A sync tool: `_run` calls the trial's sync tool function (CrewAI runs it on its own threads)."""
    run_id: str

    def _run(self, **kwargs: Any) -> str:
        return _TOOLS[self.run_id][self.name](**kwargs)


class AsyncWorldTool(BaseTool):
    """An async tool. `_run` is CrewAI's documented async form (an `async def _run`, driven by `BaseTool.run`):
    a crew's agent executor calls `tool.run`, never `arun`, also under `akickoff()`."""
    run_id: str

    async def _arun(self, **kwargs: Any) -> str:
        return await _TOOLS[self.run_id][self.name](**kwargs)

    async def _run(self, **kwargs: Any) -> str:  # type: ignore[override]
        return await self._arun(**kwargs)


class CrewStopped(Exception):
    """Raised by the step callback once the user pressed stop (the article's cooperative flag)."""


# The stop flag. CrewAI checkpoints a callback only as a reference to a module-level named function (a bound
# method "will prevent checkpointing"), so the callback, the hook and their flag live here (one trial/process):
# the adapter's stop_pressed is this flag.
CANCEL = Flag()


def raise_if_cancelled(step: Any) -> None:  # Crew(step_callback=...): the article's workaround
    if CANCEL.is_set():
        raise CrewStopped("the user pressed stop")


def abort_llm_call_if_cancelled(context: Any) -> None:  # a before_llm_call hook
    if CANCEL.is_set():  # HookAborted: CrewAI's documented way for a hook to stop the operation (since 1.15.3)
        from crewai.hooks import HookAborted

        raise HookAborted("the user pressed stop")


class CrewAIAdapter(KitAdapter):
    cancel_on_close = False  # close() leaves a kickoff still running alone
    #: resume by running the stopped Crew object again (the variant below), not from its newest checkpoint
    rerun = False
    @classmethod
    def prepare(cls) -> None:  # crewai and crewai.hooks come with this module's own imports
        import crewai.llms.providers.openai.completion  # noqa: F401
        import crewai_tools.adapters.mcp_adapter  # noqa: F401

        if CheckpointConfig is not None:
            import crewai.state.checkpoint_listener  # noqa: F401
        warm("jsonschema")

    async def start(self) -> None:
        ctx = self.ctx
        os.environ["CREWAI_STORAGE_DIR"] = str(ctx.workdir / "crewai")
        self.checkpoints = ctx.workdir / "crewai-checkpoints"
        self.stop_pressed = CANCEL  # the flag the step callback and the hook read
        self.stop_pressed.clear()
        _TOOLS[ctx.run_id] = ctx.tools
        self.on_close(lambda: _TOOLS.pop(ctx.run_id, None))
        self.entry = ENTRY.get(self.mode) or ("akickoff" if ctx.tool_style == "async" else "thread")
        if self.mode == "hook_abort":
            register_before_llm_call_hook(abort_llm_call_if_cancelled)
        cls = AsyncWorldTool if ctx.tool_style == "async" else WorldTool
        tools = [cls(name=n, description=TOOL_SPECS[n][2], args_schema=_ARGS[n], run_id=ctx.run_id) for n in ctx.tools]
        if ctx.tool_style == "mcp":  # ctx.tools is empty: the server's tools through crewai-tools' MCP adapter
            from crewai_tools import MCPServerAdapter
            from mcp import StdioServerParameters
            mcp = MCPServerAdapter(StdioServerParameters(**ctx.mcp.params()))
            self.on_close(mcp.stop)
            tools = list(mcp.tools)
        if self.mode == "hook_abort":  # unregistered first in close(), then the MCP server stopped
            self.on_close(lambda: unregister_before_llm_call_hook(abort_llm_call_if_cancelled))
        model = ({"model": ctx.model_name, "provider": "openai"} if NAMED_PROVIDER
                 else {"model": f"openai/{ctx.model_name}"})
        llm = self.model_client(LLM, **model)
        agent = Agent(role="Assistant", goal=ctx.system_prompt, backstory="You work for the user.",
                      llm=llm, tools=tools, allow_delegation=False)
        task = Task(description=ctx.prompt, expected_output="The job done, then a short summary of it.", agent=agent)
        checkpoint = ({} if CheckpointConfig is None else
                      {"checkpoint": CheckpointConfig(location=str(self.checkpoints), on_events=CHECKPOINT_EVENTS)})
        self.crew = Crew(agents=[agent], tasks=[task], **checkpoint,
                         stream=self.mode == "stream_close",
                         step_callback=raise_if_cancelled if self.mode == "callback_flag" else None)
        self.job = self._begin(self.crew)

    def _begin(self, crew: Crew) -> asyncio.Future:
        return (in_own_thread(self._sync_caller, crew, name="crewai-kickoff") if self.entry == "thread"
                else asyncio.create_task(self._async_caller(crew)))

    def _sync_caller(self, crew: Crew) -> Any:
        """Sync user code: kickoff(); a streaming crew is consumed chunk by chunk until stop, then close()."""
        out = crew.kickoff()
        if isinstance(out, CrewStreamingOutput):
            for _chunk in out:
                if self.stop_pressed.is_set():
                    break
            out.close()
        return out

    async def _async_caller(self, crew: Crew) -> Any:
        out = await (crew.kickoff_async() if self.entry == "kickoff_async" else crew.akickoff())
        if isinstance(out, CrewStreamingOutput):
            async for _chunk in out:
                if self.stop_pressed.is_set():
                    break
            await out.aclose()
        return out

    async def stop_abandon(self) -> None:
        pass  # the caller stops waiting: nothing is pressed in the framework

    # stopped once the kickoff call (or the stream consumer) has ended
    stop_cancel_kickoff_async = stop_cancel_akickoff = KitAdapter.stop_task_cancel
    # the consumer closes the stream at its next chunk; the step callback / the hook sees the flag
    stop_stream_close = stop_callback_flag = stop_hook_abort = KitAdapter.flag_and_wait

    async def resume(self) -> None:
        self.stop_pressed.clear()
        crew = self.crew  # rerun: the same Crew object run again
        if not self.rerun and CheckpointConfig is None:
            raise NoResume(f"crewai {package_versions(('crewai',))['crewai']} has no checkpoints to resume from "
                           "(CheckpointConfig came in 1.14)")
        if not self.rerun:  # the checkpoint `crewai checkpoint resume` picks: the newest JSON file
            files = glob.glob(os.path.join(glob.escape(str(self.checkpoints)), "**", "*.json"), recursive=True)
            if not files:
                raise FileNotFoundError(f"no CrewAI checkpoint was written under {self.checkpoints} before the stop")
            crew = Crew.from_checkpoint(CheckpointConfig(restore_from=max(files, key=os.path.getmtime)))
        self.job = self._begin(crew)
        await self.job


class CrewAIRerunAdapter(CrewAIAdapter):
    """The other resume path a user has: the stopped Crew object kicked off again.

    Run it with `stopbench run --adapter adapters.crewai.adapter:CrewAIRerunAdapter`.
    """

    rerun = True


ADAPTER = CrewAIAdapter
