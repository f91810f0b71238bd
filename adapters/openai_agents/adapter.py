"""OpenAI Agents SDK (openai-agents, import `agents`): its stop buttons, pressed the way its docs show.

- `break`: leave the `async for event in result.stream_events()` loop of `Runner.run_streamed(...)`
  (docs/streaming.md; the only stop the SDK had in openai-agents-python issues #574 / #1512).
- `cancel_immediate` / `cancel_after_turn`: `RunResultStreaming.cancel(mode=...)`, then keep consuming
  `stream_events()` until it ends, as its docstring and docs/streaming.md say (agents/result.py).
- `task_cancel`: cancel the asyncio task awaiting the non-streamed `Runner.run(...)`.
- `approval`: side-effect tools need approval (`function_tool(needs_approval=True)`; MCP:
  `MCPServerStdio(require_approval=...)`). The loop of docs/human_in_the_loop.md approves every
  interruption until stop is pressed; then it rejects the pending one (`state.reject`) and every
  later one, each time going on with `Runner.run(agent, state)`.

Every run keeps its history in a `SQLiteSession` (a db file in the trial folder). resume() runs the
agent again with the same session and the next user input (docs/sessions, docs/streaming.md). The
`+state` modes press the same button but resume from a `RunState` instead: `result.to_state()`,
kept as `to_string()`, read back with `RunState.from_string(agent, ...)`, pending approvals approved
(docs/results.md "Interruptions and run state", docs/human_in_the_loop.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from harness.contract.adapter import Adapter, TrialContext
from harness.tools.catalogue import TOOL_KIND

NEXT_INPUT = "Continue where you stopped."
STREAMED = ("break", "cancel_immediate", "cancel_after_turn")


class OpenAIAgentsAdapter(Adapter):
    name = "openai-agents"
    stop_modes = {
        "break": "leave the `async for event in result.stream_events()` loop (Runner.run_streamed)",
        "cancel_immediate": "result.cancel(mode='immediate') on RunResultStreaming, then drain stream_events()",
        "cancel_after_turn": "result.cancel(mode='after_turn') on RunResultStreaming, then drain stream_events()",
        "task_cancel": "task.cancel() on the asyncio task awaiting Runner.run(...) (non-streamed)",
        "approval": "tools need_approval: state.reject(pending interruption) + Runner.run(agent, state), "
                    "no further approvals",
        "cancel_immediate+state": "as cancel_immediate; resume from result.to_state() (RunState.from_string)",
        "approval+state": "as approval; resume from the declined pause's RunState (from_string), approved",
    }
    resume_primitive = ("Runner.run again with the same SQLiteSession and the next user input "
                        "(`+state` modes: Runner.run(agent, RunState.from_string(agent, saved)))")
    environment = {"OPENAI_AGENTS_DISABLE_TRACING": "1"}
    packages = ("openai-agents", "openai", "mcp")

    @classmethod
    def prepare(cls) -> None:
        import agents  # noqa: F401
        import agents.mcp  # noqa: F401

        with contextlib.suppress(Exception):  # only a warm-up: changed openai internals must not stop a run
            _warm_openai_models()

    # --- the contract ---------------------------------------------------------------------------

    async def start(self, ctx: TrialContext) -> None:
        from agents import SQLiteSession, set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        self.ctx = ctx
        self.mode = ctx.mode.split("+")[0]
        self.resume_from_state = ctx.mode.endswith("+state")
        self.client = AsyncOpenAI(base_url=ctx.model_base_url, api_key="x", max_retries=0)
        self.session = SQLiteSession(ctx.run_id, ctx.workdir / "openai-agents-session.db")
        self.stop_pressed = asyncio.Event()
        self.declined = asyncio.Event()  # approval: a pending approval was rejected
        self.result: Any = None  # the RunResultStreaming of a streamed run
        self.saved_state: str | None = None  # RunState.to_string() for the `+state` resume
        self.mcp: _McpOwner | None = None
        if ctx.tool_style == "mcp":
            self.mcp = await _McpOwner.open(ctx, approval=self.mode == "approval")
        self.agent = self._agent()
        self.job = self._launch(ctx.prompt)

    async def stop(self, mode: str) -> None:
        self.stop_pressed.set()
        if self.mode == "break":  # the loop leaves at its next event
            await asyncio.wait({self.job})
        elif self.mode in ("cancel_immediate", "cancel_after_turn"):
            self.result.cancel(mode=self.mode.removeprefix("cancel_"))
            await asyncio.wait({self.job})  # the job keeps draining stream_events() until it ends
        elif self.mode == "task_cancel":
            self.job.cancel()
            await asyncio.wait({self.job})
        elif self.mode == "approval":  # takes effect at the next approval the run asks for
            declined = asyncio.ensure_future(self.declined.wait())
            await asyncio.wait({self.job, declined}, return_when=asyncio.FIRST_COMPLETED)
            declined.cancel()
        else:
            raise ValueError(f"unknown stop mode {mode!r}")

    async def wait(self) -> None:
        await self.job

    async def resume(self) -> None:
        from agents import RunState

        self.stop_pressed.clear()
        if not self.resume_from_state:
            self.job = self._launch(NEXT_INPUT)
        else:
            if self.saved_state is None:
                raise RuntimeError("the stopped job left no result to take a RunState from")
            state = await RunState.from_string(self.agent, self.saved_state)
            for item in state.get_interruptions():  # the user now approves what was pending
                state.approve(item)
            self.job = self._launch(state)
        await self.job

    async def close(self) -> None:
        if not self.job.done():
            self.job.cancel()
            await asyncio.wait({self.job})
        if self.mcp is not None:
            await self.mcp.close()
        self.session.close()
        await self.client.close()

    # --- the job, as the SDK's docs write it ------------------------------------------------------

    def _agent(self) -> Any:
        from agents import Agent, OpenAIResponsesModel, function_tool

        approval = self.mode == "approval"
        tools = []
        if self.ctx.tool_style != "mcp":
            funcs = self.ctx.tools.sync if self.ctx.tool_style == "sync" else self.ctx.tools.async_
            tools = [function_tool(fn, needs_approval=approval and name in TOOL_KIND) for name, fn in funcs.items()]
        return Agent(
            name="assistant", instructions=self.ctx.system_prompt, tools=tools,
            mcp_servers=[self.mcp.server] if self.mcp else [],
            model=OpenAIResponsesModel(model=self.ctx.model_name, openai_client=self.client),
        )

    def _launch(self, input: Any) -> asyncio.Task:
        from agents import Runner

        if self.mode in STREAMED:
            # run_streamed starts the run at once; the job is the loop that consumes its events
            self.result = Runner.run_streamed(self.agent, input, session=self.session)
            return asyncio.create_task(self._consume(self.result))
        if self.mode == "task_cancel":
            return asyncio.create_task(Runner.run(self.agent, input, session=self.session))
        return asyncio.create_task(self._approval_loop(input))

    async def _consume(self, result: Any) -> None:
        async for _event in result.stream_events():
            if self.mode == "break" and self.stop_pressed.is_set():
                break
        if self.resume_from_state:
            self.saved_state = result.to_state().to_string()

    async def _approval_loop(self, input: Any) -> None:
        from agents import Runner

        result = await Runner.run(self.agent, input, session=self.session)
        while result.interruptions:
            state = result.to_state()
            decline = self.stop_pressed.is_set()
            if decline and self.resume_from_state and self.saved_state is None:
                self.saved_state = state.to_string()  # the pause the user declined
            for item in result.interruptions:
                if decline:
                    state.reject(item)
                else:
                    state.approve(item)
            if decline:
                self.declined.set()
            result = await Runner.run(self.agent, state, session=self.session)
        if self.resume_from_state and self.saved_state is None:  # no approval was declined
            self.saved_state = result.to_state().to_string()


def _warm_openai_models() -> None:
    """Build in the parent what the openai client builds lazily on the first Responses payload it parses
    (its `responses` module, the pydantic models and discriminated unions of the events and of the nested
    `Response` and output items). Left to each forked subject this took 0.3 to 1.5 s of CPU on the event
    loop in the middle of the first model turn: a stop pressed then could not run, and a run that went on
    after `break` went quiet for longer than the harness's settle window."""
    import typing

    from openai import AsyncOpenAI
    from openai._models import construct_type
    from openai.types.responses import Response, ResponseStreamEvent

    AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x").responses  # noqa: B018 (a lazy import)
    text = {"type": "output_text", "text": "a", "annotations": [], "logprobs": []}
    items = [{"type": "message", "id": "m", "role": "assistant", "status": "completed", "content": [text]},
             {"type": "function_call", "id": "f", "call_id": "c", "name": "t", "arguments": "{}",
              "status": "completed"}]
    response = {"id": "r", "object": "response", "created_at": 0, "status": "completed", "model": "m", "output": items,
                "parallel_tool_calls": True, "tool_choice": "auto", "error": None, "incomplete_details": None,
                "tools": [{"type": "function", "name": "t", "parameters": {"type": "object"}, "strict": True}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details":
                          {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
                "instructions": "i", "metadata": {}, "text": {"format": {"type": "text"}}, "truncation": "disabled"}
    where = {"item_id": "m", "output_index": 0, "content_index": 0, "sequence_number": 0}
    events = [{"type": t, "response": response} for t in ("response.created", "response.completed")]
    events += [{"type": t, "item": item, **where} for t in ("response.output_item.added", "response.output_item.done")
               for item in items]
    events += [{"type": t, "part": text, **where}
               for t in ("response.content_part.added", "response.content_part.done")]
    events += [{"type": "response.output_text.delta", "delta": "a", "logprobs": [], **where},
               {"type": "response.output_text.done", "text": "a", "logprobs": [], **where},
               {"type": "response.function_call_arguments.delta", "delta": "{}", **where},
               {"type": "response.function_call_arguments.done", "arguments": "{}", "name": "t", **where}]
    union = typing.get_args(ResponseStreamEvent)[0]
    events += [{"type": typing.get_args(v.model_fields["type"].annotation)[0]} for v in typing.get_args(union)]
    for event in events:
        construct_type(value=event, type_=ResponseStreamEvent)
    construct_type(value=response, type_=Response)


class _McpOwner:
    """The world's MCP server as `MCPServerStdio`, entered and exited in one task of its own (its
    anyio scopes must exit where they entered); it lives from start() to close(), like an app's."""

    def __init__(self) -> None:
        self.server: Any = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._owner: asyncio.Task | None = None

    @classmethod
    async def open(cls, ctx: TrialContext, approval: bool) -> _McpOwner:
        self = cls()
        self._owner = asyncio.create_task(self._own(ctx, approval))
        await self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    async def _own(self, ctx: TrialContext, approval: bool) -> None:
        from agents.mcp import MCPServerStdio

        params = {"command": ctx.mcp_command[0], "args": ctx.mcp_command[1:], "env": dict(ctx.env)}
        require = {name: "always" for name in TOOL_KIND} if approval else None
        try:
            async with MCPServerStdio(params=params, name="world", require_approval=require) as server:
                self.server = server
                self._ready.set()
                await self._closing.wait()
        except BaseException as e:
            self._error = e
            self._ready.set()

    async def close(self) -> None:
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._owner


ADAPTER = OpenAIAgentsAdapter
