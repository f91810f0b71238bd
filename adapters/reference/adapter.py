"""The reference: a plain asyncio agent loop on each provider's official SDK (openai, anthropic, google-genai: see
wires.py) that does stop right.

No framework. It shows what is possible, so every framework's row has something to be compared to:
- the model stream is closed the moment stop is pressed (the task awaiting it is cancelled);
- tool calls already sent are awaited, not abandoned, so their outcome is known; a call not yet sent
  when stop is pressed is not sent (its tool checks the trial's stop button as the request leaves);
- every effect that committed after the stop is compensated (recall / close / cancel / delete);
- each step carries an idempotency key, and a checkpoint of completed steps lets resume continue
  without repeating a side effect or a model turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from harness.contract.adapter import McpServer
from harness.contract.kit import KitAdapter, OwnedContext, in_own_thread, warm
from harness.stop_button import NOT_SENT, StopPressed
from harness.tools.catalogue import TOOL_KIND

from .checkpoint import Checkpoint
from .wires import WIRES

#: a model stream that breaks off mid-way is asked again this many times (the SDK's own retries, for requests)
STREAM_RETRIES = 2


class ReferenceAdapter(KitAdapter):
    @classmethod
    def prepare(cls) -> None:
        """Import in the parent what a subject would import on first use, as a warm app has: the mcp SDK's client
        (~0.5 s of CPU in every MCP trial after the fork) and what each provider's client loads on its first
        request."""
        warm("mcp.client.stdio", "openai.resources.chat.chat", "anthropic.resources.messages", "google.genai.models",
             "httpcore2", "jsonschema")

    async def start(self) -> None:
        self.wire = WIRES[self.ctx.provider](self.ctx)
        self.on_close(self.wire.close)
        self.checkpoint = Checkpoint(self.ctx.workdir / "reference-checkpoint.json")
        self.inflight: set[asyncio.Task] = set()
        self.stop_ns: int | None = None
        self.mcp: OwnedContext | None = None
        self.on_close(self._close_mcp)
        await self._open_mcp()
        self.job = asyncio.create_task(self._loop())

    async def stop_cancel(self) -> None:
        self.stop_ns = time.monotonic_ns()
        await self.stop_task_cancel()  # first the model stream: closed once the task has unwound
        await asyncio.gather(*self.inflight, return_exceptions=True)  # sent calls: their outcome known
        self.inflight.clear()
        await self._compensate_late_effects()
        await self._close_mcp()

    async def resume(self) -> None:
        self.stop_ns = None
        await self._open_mcp()
        self.job = asyncio.create_task(self._loop())
        await self.job

    async def _open_mcp(self) -> None:
        if self.ctx.tool_style == "mcp" and self.mcp is None:
            # its calls ask the stop button in the server, where they are sent (harness/stop_button.py)
            self.mcp = await OwnedContext.open(lambda: _mcp_session(self.ctx.mcp.asking(self.ctx.stop_button)))

    async def _close_mcp(self) -> None:
        if self.mcp is not None:
            mcp, self.mcp = self.mcp, None
            await mcp.close()

    # --- the agent loop ---------------------------------------------------------------------------

    async def _loop(self) -> None:
        dropped = 0  # streams dropped mid-way in a row: asked again, as the SDK retries a failed request
        while True:
            pending = self.checkpoint.pending_calls()
            if pending:
                tasks = [self._start_tool(call) for call in pending]
                try:
                    await asyncio.gather(*(asyncio.shield(t) for t in tasks))
                except StopPressed as e:  # the stop is pressed, its cancel is on the way: end as cancelled
                    raise asyncio.CancelledError() from e
                self.inflight.difference_update(tasks)  # all ended and read; else the stop reads them
                continue
            try:
                message = await self.wire.turn(self.checkpoint.messages(self.ctx.system_prompt, self.ctx.prompt))
            except self.wire.dropped:  # the SDK retries a request that failed, not a stream that broke off
                dropped += 1
                if dropped > STREAM_RETRIES:
                    raise
                continue
            dropped = 0
            self.checkpoint.turns.append(message)
            self.checkpoint.save()
            if not message.get("tool_calls"):
                return

    def _start_tool(self, call: dict[str, Any]) -> asyncio.Task:
        """A tool call's task, kept in `inflight` until its outcome is read: by the loop, or by the stop when the
        loop was cancelled first (a call that then finds the button pressed ends with StopPressed, read there)."""
        task = asyncio.create_task(self._run_tool(call))
        self.inflight.add(task)
        return task

    async def _run_tool(self, call: dict[str, Any]) -> None:
        name = call["function"]["name"]
        args = json.loads(call["function"]["arguments"] or "{}")
        attempt = self.checkpoint.attempts.get(call["id"], 0)
        key = f"{self.ctx.run_id}:{call['id']}:{attempt}"
        button = self.ctx.stop_button  # not sent once stop is pressed: left pending, resume sends it
        if self.mcp is not None:
            if button.pressed:  # not written to the server; the server asks the button again as it sends
                raise StopPressed(f"{name}: not sent, stop was pressed")
            content = await _mcp_call(self.mcp.value, name, args)
        elif self.ctx.tool_style == "sync":
            content = await asyncio.shield(in_own_thread(
                lambda: self.ctx.toolbox.call(name, args, key, unless_pressed=button), name="reference-tool"))
        else:
            content = await self.ctx.toolbox.acall(name, args, idempotency_key=key, unless_pressed=button)
        try:
            answer = json.loads(content)
        except ValueError:
            answer = {}
        effect = ({"kind": TOOL_KIND[name], "effect_id": answer.get("effect_id"),
                   "committed_ns": answer.get("committed_ns")} if name in TOOL_KIND else None)
        self.checkpoint.results[call["id"]] = {"content": content, "effect": effect}
        self.checkpoint.save()

    async def _compensate_late_effects(self) -> None:
        """Undo what landed after the user said stop, and forget it so resume does it again."""
        late = [(cid, r["effect"]) for cid, r in self.checkpoint.results.items()
                if r["effect"] and r["effect"].get("committed_ns") and r["effect"]["committed_ns"] > self.stop_ns]
        for cid, effect in late:
            await self.ctx.toolbox.acompensate(effect["kind"], effect["effect_id"])
            del self.checkpoint.results[cid]
            self.checkpoint.attempts[cid] = self.checkpoint.attempts.get(cid, 0) + 1
        self.checkpoint.save()


@contextlib.asynccontextmanager
async def _mcp_session(server: McpServer):
    """The world's MCP stdio server through the mcp SDK's own client: stdio_client + ClientSession."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with stdio_client(StdioServerParameters(**server.params())) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _mcp_call(session: Any, name: str, args: dict[str, Any]) -> str:
    result = await session.call_tool(name, args)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if getattr(result, "is_error", None) or getattr(result, "isError", None):  # mcp 2.x / 1.x
        if text == NOT_SENT:  # the server had not sent it when stop was pressed: pending, resume sends it
            raise StopPressed(f"{name}: {text}")
        raise RuntimeError(f"MCP tool {name} failed: {text}")
    return text


ADAPTER = ReferenceAdapter
