"""OpenAI Agents SDK (openai-agents, import `agents`): its stop buttons, pressed the way its docs show.

`break` leaves the `stream_events()` loop of `Runner.run_streamed` (docs/streaming.md; the only stop the SDK had
in openai-agents-python issues #574 / #1512); after `RunResultStreaming.cancel(mode=...)` the job keeps consuming
`stream_events()` until it ends (its docstring in agents/result.py, docs/streaming.md); `approval` is the loop of
docs/human_in_the_loop.md, declining from the stop on. Every run keeps its history in a `SQLiteSession` (a db file
in the trial folder) that resume() goes on with (docs/sessions, docs/streaming.md); `+state` modes resume from
`result.to_state()` instead (docs/results.md "Interruptions and run state", docs/human_in_the_loop.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from harness.contract.kit import NEXT_INPUT, KitAdapter, OwnedContext, warm
from harness.tools.catalogue import TOOL_KIND

STREAMED = ("break", "cancel_immediate", "cancel_after_turn")


class OpenAIAgentsAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        import agents.mcp  # noqa: F401 (and `agents`)
        with contextlib.suppress(Exception):  # only a warm-up: changed openai internals must not stop a run
            _warm_openai_models()
        warm("agents.memory.sqlite_session", "jsonschema")

    async def start(self) -> None:
        from agents import SQLiteSession, set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        self.button = self.mode.split("+")[0]  # the job runs as its button needs; `+state` changes only resume
        self.resume_from_state = self.mode.endswith("+state")
        self.client = self.model_client(AsyncOpenAI)
        self.on_close(self.client.close)
        self.session = SQLiteSession(self.ctx.run_id, self.ctx.workdir / "openai-agents-session.db")
        self.on_close(self.session.close)
        self.declined = asyncio.Event()  # approval rejected a pending one
        self.result: Any = None  # the RunResultStreaming of a streamed run
        self.saved_state: str | None = None  # RunState.to_string() for the `+state` resume
        self.mcp: OwnedContext | None = None
        if self.ctx.tool_style == "mcp":  # the SDK leaves it to its caller: held from start() to close(), like an app
            from agents.mcp import MCPServerStdio
            gate = {name: "always" for name in TOOL_KIND} if self.button == "approval" else None
            self.mcp = await OwnedContext.open(
                lambda: MCPServerStdio(params=self.ctx.mcp.params(), name="world", require_approval=gate))
            self.on_close(self.mcp.close)
        self.agent = self._agent()
        self.job = self._launch(self.ctx.prompt)

    # --- the stop buttons (task_cancel: KitAdapter's) ------------------------------------------------

    stop_break = KitAdapter.flag_and_wait  # the loop leaves at its next event

    async def stop_cancel_immediate(self) -> None:
        self.result.cancel(mode="immediate")
        await self.until_done()  # the job keeps draining stream_events() until it ends

    async def stop_cancel_after_turn(self) -> None:
        self.result.cancel(mode="after_turn")
        await self.until_done()  # the job keeps draining stream_events() until it ends

    async def stop_approval(self) -> None:
        self.stop_pressed.set()  # takes effect at the next approval the run asks for
        await self.until(self.declined)

    stop_cancel_immediate_state = stop_cancel_immediate
    stop_approval_state = stop_approval

    async def resume(self) -> None:
        self.stop_pressed.clear()
        input: Any = NEXT_INPUT
        if self.resume_from_state:
            from agents import RunState
            if self.saved_state is None:
                raise RuntimeError("the stopped job left no result to take a RunState from")
            input = await RunState.from_string(self.agent, self.saved_state)
            for item in input.get_interruptions():  # the user now approves what was pending
                input.approve(item)
        self.job = self._launch(input)
        await self.job

    def _agent(self) -> Any:
        from agents import Agent, OpenAIResponsesModel, function_tool

        tools = [function_tool(fn, needs_approval=self.button == "approval" and name in TOOL_KIND)
                 for name, fn in self.ctx.tools.items()]  # the SDK runs sync ones on asyncio.to_thread
        return Agent(name="assistant", instructions=self.ctx.system_prompt, tools=tools,
                     mcp_servers=[self.mcp.value] if self.mcp else [],
                     model=OpenAIResponsesModel(model=self.ctx.model_name, openai_client=self.client))

    def _launch(self, input: Any) -> asyncio.Task:
        from agents import Runner

        if self.button in STREAMED:
            # run_streamed starts the run at once; the job is the loop that consumes its events
            self.result = Runner.run_streamed(self.agent, input, session=self.session)
            return asyncio.create_task(self._consume(self.result))
        if self.button == "task_cancel":
            return asyncio.create_task(Runner.run(self.agent, input, session=self.session))
        return asyncio.create_task(self._approval_loop(input))

    async def _consume(self, result: Any) -> None:
        async for _event in result.stream_events():
            if self.button == "break" and self.stop_pressed.is_set():
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
                state.reject(item) if decline else state.approve(item)
            if decline:
                self.declined.set()
            result = await Runner.run(self.agent, state, session=self.session)
        if self.resume_from_state and self.saved_state is None:  # no approval was declined
            self.saved_state = result.to_state().to_string()


def _warm_openai_models() -> None:
    """Build in the parent what the openai client builds lazily on its first Responses payload (`responses` module,
    pydantic models and unions of the stream events and `Response`): in a forked subject that took 0.3-1.5 s of CPU
    mid first model turn, so a stop could not run then and a run going on after `break` outlasted the settle window."""
    import typing

    from openai import AsyncOpenAI
    from openai._models import construct_type
    from openai.types.responses import Response, ResponseStreamEvent

    AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x").responses  # noqa: B018 (a lazy import)
    text = {"type": "output_text", "text": "a", "annotations": [], "logprobs": []}
    call = {"type": "function_call", "id": "f", "call_id": "c", "name": "t", "arguments": "{}", "status": "completed"}
    items = [{"type": "message", "id": "m", "role": "assistant", "status": "completed", "content": [text]}, call]
    response = {"id": "r", "object": "response", "created_at": 0, "status": "completed", "model": "m", "output": items,
                "parallel_tool_calls": True, "tool_choice": "auto", "error": None, "incomplete_details": None,
                "tools": [{"type": "function", "name": "t", "parameters": {"type": "object"}, "strict": True}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details":
                          {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
                "instructions": "i", "metadata": {}, "text": {"format": {"type": "text"}}, "truncation": "disabled"}
    at = {"item_id": "m", "output_index": 0, "content_index": 0, "sequence_number": 0}
    events = [{"type": f"response.{t}", "response": response} for t in ("created", "completed")]
    events += [{"type": f"response.output_item.{t}", "item": i, **at} for t in ("added", "done") for i in items]
    events += [{"type": f"response.content_part.{t}", "part": text, **at} for t in ("added", "done")]
    events += [{"type": "response.output_text.delta", "delta": "a", "logprobs": [], **at},
               {"type": "response.output_text.done", "text": "a", "logprobs": [], **at},
               {"type": "response.function_call_arguments.delta", "delta": "{}", **at},
               {"type": "response.function_call_arguments.done", "arguments": "{}", "name": "t", **at}]
    union = typing.get_args(ResponseStreamEvent)[0]
    events += [{"type": typing.get_args(v.model_fields["type"].annotation)[0]} for v in typing.get_args(union)]
    for event in events:
        construct_type(value=event, type_=ResponseStreamEvent)
    construct_type(value=response, type_=Response)


ADAPTER = OpenAIAgentsAdapter
