"""The reference loop's model turn on each provider, through that provider's official SDK at its defaults.

The loop keeps its conversation in one form (Chat Completions messages: the checkpoint's); each wire turns it into
its API's request, streams the answer, and gives the assistant's message back in that form. Leaving `turn()` (also
by cancellation) closes the HTTP stream: the provider sees the client go away.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from harness.contract.adapter import TrialContext
from harness.contract.kit import API_KEY
from harness.tools.catalogue import TOOL_SPECS, json_schema, openai_tool_definitions

#: Anthropic's Messages API requires max_tokens (it has no default); the scripted answers are far shorter
ANTHROPIC_MAX_TOKENS = 4096

Message = dict[str, Any]


def assistant(text: list[str], calls: list[Message]) -> Message:
    """An assistant message in the loop's form: its text (None when empty) and its tool calls, if any."""
    message: Message = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def tool_call(call_id: str, name: str, arguments: str) -> Message:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class OpenAIWire:
    """Chat Completions, streamed, on `openai.AsyncOpenAI` (2 retries, 10 min timeout: its defaults)."""

    def __init__(self, ctx: TrialContext):
        from openai import APIConnectionError, AsyncOpenAI

        self.ctx = ctx
        self.client = AsyncOpenAI(base_url=ctx.model_base_url, api_key=API_KEY)
        #: what a stream that broke off mid-way raises (the SDK retries a failed request, not a broken stream)
        self.dropped: tuple[type[BaseException], ...] = (APIConnectionError,)

    async def turn(self, messages: list[Message]) -> Message:
        stream = await self.client.chat.completions.create(
            model=self.ctx.model_name, stream=True, tools=openai_tool_definitions(), messages=messages)
        text: list[str] = []
        calls: dict[int, Message] = {}
        async with stream:  # leaving this block (also by cancellation) closes the HTTP stream
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                for tc in delta.tool_calls or []:
                    call = calls.setdefault(tc.index, tool_call("", "", ""))
                    call["id"] = tc.id or call["id"]
                    fn = tc.function
                    call["function"]["name"] = (fn.name if fn else None) or call["function"]["name"]
                    call["function"]["arguments"] += (fn.arguments if fn else None) or ""
        return assistant(text, [calls[i] for i in sorted(calls)])

    async def close(self) -> None:
        await self.client.close()


class AnthropicWire:
    """Messages, streamed, on `anthropic.AsyncAnthropic` (2 retries with its own back-off, 529 included; 10 min
    timeout: its defaults)."""

    def __init__(self, ctx: TrialContext):
        from anthropic import APIConnectionError, AsyncAnthropic

        self.ctx = ctx
        self.client = AsyncAnthropic(base_url=ctx.model_base_url, api_key=API_KEY)
        self.dropped: tuple[type[BaseException], ...] = (APIConnectionError,)

    async def turn(self, messages: list[Message]) -> Message:
        system, rest = _system(messages)
        stream = await self.client.messages.create(
            model=self.ctx.model_name, max_tokens=ANTHROPIC_MAX_TOKENS, system=system, stream=True,
            messages=anthropic_messages(rest),
            tools=[{"name": n, "description": TOOL_SPECS[n][2], "input_schema": json_schema(n)} for n in TOOL_SPECS])
        text: list[str] = []
        calls: dict[int, Message] = {}
        async with stream:  # leaving this block (also by cancellation) closes the HTTP stream
            async for event in stream:
                if event.type == "content_block_start" and event.content_block.type == "tool_use":
                    calls[event.index] = tool_call(event.content_block.id, event.content_block.name, "")
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    text.append(event.delta.text)
                elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    calls[event.index]["function"]["arguments"] += event.delta.partial_json
        return assistant(text, [calls[i] for i in sorted(calls)])

    async def close(self) -> None:
        await self.client.close()


class GeminiWire:
    """generateContent, streamed (`streamGenerateContent?alt=sse`), on google-genai's `client.aio` (no retries
    unless asked for, no timeout: its defaults)."""

    def __init__(self, ctx: TrialContext):
        from google import genai
        from google.genai import types

        self.ctx = ctx
        self.types = types
        self.client = genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=ctx.model_base_url))
        #: google-genai passes a broken stream's transport error through, from httpx or httpx2 (whichever it uses)
        self.dropped: tuple[type[BaseException], ...] = _transport_errors()

    async def turn(self, messages: list[Message]) -> Message:
        types = self.types
        system, rest = _system(messages)
        config = types.GenerateContentConfig(system_instruction=system, tools=[types.Tool(function_declarations=[
            types.FunctionDeclaration(name=n, description=TOOL_SPECS[n][2], parameters_json_schema=json_schema(n))
            for n in TOOL_SPECS])])
        stream = await self.client.aio.models.generate_content_stream(
            model=self.ctx.model_name, contents=gemini_contents(rest), config=config)
        text: list[str] = []
        calls: list[Message] = []
        async with contextlib.aclosing(stream):  # closed (also by cancellation): the HTTP stream with it
            async for chunk in stream:
                for candidate in chunk.candidates or []:
                    for part in (candidate.content.parts if candidate.content else None) or []:
                        if part.text:
                            text.append(part.text)
                        if part.function_call:
                            fc = part.function_call
                            calls.append(tool_call(fc.id or f"call_{len(calls)}", fc.name or "",
                                                   json.dumps(fc.args or {})))
        return assistant(text, calls)

    async def close(self) -> None:
        await self.client.aio.aclose()
        self.client.close()


def _transport_errors() -> tuple[type[BaseException], ...]:
    found = []
    for module in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            found.append(__import__(module).TransportError)
    return tuple(found)


WIRES = {"openai": OpenAIWire, "anthropic": AnthropicWire, "gemini": GeminiWire}


def _system(messages: list[Message]) -> tuple[str, list[Message]]:
    """The system prompt apart from the conversation (Anthropic and Gemini take it as a field of the request)."""
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    return system, [m for m in messages if m["role"] != "system"]


def anthropic_messages(messages: list[Message]) -> list[Message]:
    """Chat Completions messages as Anthropic's: a tool call is a `tool_use` block of the assistant's message, and
    the results of one turn's calls are `tool_result` blocks of the next user message."""
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks: list[Message] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": json.loads(c["function"]["arguments"] or "{}")} for c in m.get("tool_calls") or []]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def gemini_contents(messages: list[Message]) -> list[Message]:
    """Chat Completions messages as Gemini's contents: the model's turn holds its functionCall parts, and the
    responses to one turn's calls are functionResponse parts of the next user turn, each named by its call."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for m in messages:
        if m["role"] == "tool":
            part = {"function_response": {"id": m["tool_call_id"], "name": names.get(m["tool_call_id"], ""),
                                          "response": {"result": m["content"]}}}
            if out and out[-1]["role"] == "user" and "function_response" in out[-1]["parts"][0]:
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        elif m["role"] == "assistant":
            parts: list[Message] = [{"text": m["content"]}] if m.get("content") else []
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
                parts.append({"function_call": {"id": c["id"], "name": c["function"]["name"],
                                                "args": json.loads(c["function"]["arguments"] or "{}")}})
            out.append({"role": "model", "parts": parts})
        else:
            out.append({"role": "user", "parts": [{"text": m["content"]}]})
    return out
