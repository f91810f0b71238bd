"""An adapter whose verdicts are known (issue #11, case 8): one stop button that aborts everywhere, and one
that aborts while the model is asked but hangs in stop() while a tool call is in flight, as AutoGen's
`token` mode does at the effect anchors. Verdicts over the rows that survived would call the second
button an abort primitive; over all rows they must not.

It talks to the world directly (no framework) so that what it does is not in doubt.
"""

from __future__ import annotations

import asyncio

from harness.contract.adapter import Adapter
from tests.known_answer.adapters import model_loop


class AbortsOrHangs(Adapter):
    """A complete agent loop; resume runs it again from the start (no checkpoint), to its final answer."""

    name = "known-aborts-or-hangs"
    stop_modes = {
        "cancel": "cancel the job task, wherever it is",
        "token": "cancel the job task while the model is asked; block forever while a tool call is in flight",
    }
    resume_primitive = "run the agent loop again from the start"
    tool_styles = ("async",)

    async def start(self) -> None:
        self.tool_calls_in_flight = 0
        self.task = asyncio.create_task(self.job())

    async def job(self) -> None:
        await model_loop(self.ctx, self._call_tool)

    async def _call_tool(self, name: str, arguments: dict) -> str:
        self.tool_calls_in_flight += 1
        try:
            return await self.ctx.toolbox.acall(name, arguments)
        finally:
            self.tool_calls_in_flight -= 1

    async def stop_cancel(self) -> None:
        self.task.cancel()

    async def stop_token(self) -> None:
        if self.tool_calls_in_flight:
            await asyncio.Event().wait()  # never set: the button hangs (the loop keeps running)
        self.task.cancel()

    async def wait(self) -> None:
        await self.task

    async def resume(self) -> None:
        self.task = asyncio.create_task(self.job())
        await self.task

    async def close(self) -> None:
        pass
