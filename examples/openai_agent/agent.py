"""A plain agent on the official openai SDK, with a stop button: the kind of agent you would test with the
stopbench pytest plugin. `run_agent` is the whole agent; `stop_aware=False` makes its stop button lie in
the most common way: the UI stops listening, the loop finishes its tool calls and its next turn anyway.
`run_agent_without_streaming` is the same agent asking for whole answers (`stream=False`): a careful one cancels
its request when the stop is pressed, though the provider still generates (and bills) the answer in full.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from openai import AsyncOpenAI

from stopbench import AgentContext


def tool_definitions(ctx: AgentContext) -> list[dict[str, Any]]:
    """Your agent's tools as the model sees them (here: the world's tools, which the scenario scripts)."""
    return [{"type": "function", "function": {
        "name": name, "description": (fn.__doc__ or name).split("\n")[0],
        "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in fn.__signature__.parameters},
                       "required": list(fn.__signature__.parameters)}}} for name, fn in ctx.tools.items()]


def _conversation(ctx: AgentContext, stop_aware: bool) -> tuple[AsyncOpenAI, list[dict[str, Any]], Any]:
    """The model client, the conversation so far, and how the agent asks whether stop was pressed (a careless
    agent never does)."""
    client = AsyncOpenAI(base_url=ctx.model_base_url, api_key="not-needed")
    messages: list[dict[str, Any]] = [{"role": "system", "content": ctx.system_prompt},
                                      {"role": "user", "content": ctx.prompt}]
    return client, messages, (ctx.stop_requested.is_set if stop_aware else (lambda: False))


async def run_agent(ctx: AgentContext, stop_aware: bool = True) -> None:
    client, messages, stopped = _conversation(ctx, stop_aware)
    try:
        while not stopped():
            calls: dict[int, dict[str, Any]] = {}
            text = []
            stream = await client.chat.completions.create(model=ctx.model_name, messages=messages,
                                                          tools=tool_definitions(ctx), stream=True)
            async with stream:  # leaving it closes the HTTP stream: the model stops generating
                async for chunk in stream:
                    if stopped():
                        return
                    delta = chunk.choices[0].delta if chunk.choices else None
                    if delta and delta.content:
                        text.append(delta.content)
                    for tc in (delta.tool_calls or []) if delta else []:
                        call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = tc.id or call["id"]
                        call["name"] = (tc.function.name if tc.function else None) or call["name"]
                        call["arguments"] += (tc.function.arguments if tc.function else None) or ""
            if not calls:
                return  # the final answer
            messages.append({"role": "assistant", "content": "".join(text) or None, "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls.values()]})
            for c in calls.values():
                if stopped():  # not one more side effect once the user said stop
                    return
                result = await ctx.tools[c["name"]](**json.loads(c["arguments"] or "{}"))
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    finally:
        await client.close()


#: how often a non-streaming agent looks at its stop flag while its request is out
STOP_POLL_S = 0.001


async def _answer_unless_stopped(request: asyncio.Future[Any], stopped: Any) -> Any | None:
    """The request's answer, or None once the stop is pressed: the request is then cancelled (its connection
    closed) within a poll of the flag."""
    while not request.done():
        if stopped():
            request.cancel()
            await asyncio.gather(request, return_exceptions=True)
            return None
        await asyncio.wait({request}, timeout=STOP_POLL_S)
    return request.result()


async def run_agent_without_streaming(ctx: AgentContext, stop_aware: bool = True) -> None:
    client, messages, stopped = _conversation(ctx, stop_aware)
    try:
        while not stopped():
            request = asyncio.ensure_future(client.chat.completions.create(
                model=ctx.model_name, messages=messages, tools=tool_definitions(ctx), stream=False))
            completion = await _answer_unless_stopped(request, stopped)
            if completion is None:
                return
            answer = completion.choices[0].message
            if not answer.tool_calls:
                return  # the final answer
            messages.append(answer.model_dump(exclude_none=True))
            for call in answer.tool_calls:
                if stopped():  # not one more side effect once the user said stop
                    return
                result = await ctx.tools[call.function.name](**json.loads(call.function.arguments or "{}"))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    finally:
        await client.close()


async def careful_agent(ctx: AgentContext) -> None:
    await run_agent(ctx, stop_aware=True)


async def careless_agent(ctx: AgentContext) -> None:
    await run_agent(ctx, stop_aware=False)


async def careful_plain_agent(ctx: AgentContext) -> None:
    await run_agent_without_streaming(ctx, stop_aware=True)


async def careless_plain_agent(ctx: AgentContext) -> None:
    await run_agent_without_streaming(ctx, stop_aware=False)
