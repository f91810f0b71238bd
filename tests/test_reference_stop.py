"""The reference adapter's stop reads the outcome of every tool call it started: a call that ends with StopPressed
(it found the button pressed as it was about to leave) after the loop was cancelled is read by the stop, never
left for the garbage collector to report ("Task exception was never retrieved")."""

from __future__ import annotations

import asyncio
import gc
from types import SimpleNamespace

from adapters.reference.adapter import ReferenceAdapter
from adapters.reference.checkpoint import Checkpoint
from harness.contract.kit import KitAdapter
from harness.stop_button import StopPressed

CALLS = [{"id": f"call_{i}", "type": "function", "function": {"name": "send_email", "arguments": "{}"}}
         for i in (1, 2)]


def test_a_tool_call_that_ends_after_the_loop_was_cancelled_is_read_by_the_stop(tmp_path):
    unread: list[str] = []

    async def trial() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unread.append(
            f"{context['message']}: {context.get('exception')!r}"))
        adapter = ReferenceAdapter(SimpleNamespace(mode="cancel"))
        adapter.inflight, adapter.stop_ns, adapter.mcp = set(), None, None
        adapter.checkpoint = Checkpoint(tmp_path / "checkpoint.json")
        adapter.checkpoint.turns = [{"role": "assistant", "content": None, "tool_calls": CALLS}]
        button_seen = asyncio.Event()

        async def run_tool(call: dict) -> None:  # as the toolbox does once the button is pressed: not sent
            await button_seen.wait()
            raise StopPressed(f"{call['id']}: not sent, stop was pressed")

        async def cancel_then_calls_end() -> None:  # the planted order: the loop ends first, then the calls
            await KitAdapter.stop_task_cancel(adapter)
            button_seen.set()
            for _ in range(5):
                await asyncio.sleep(0)

        adapter._run_tool = run_tool
        adapter.stop_task_cancel = cancel_then_calls_end
        adapter.job = asyncio.create_task(adapter._loop())
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(adapter.inflight) == 2  # both calls started
        await adapter.stop_cancel()
        assert adapter.job.cancelled() and adapter.inflight == set()

    asyncio.run(trial())
    gc.collect()
    assert unread == []
