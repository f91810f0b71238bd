"""An agent that repairs a session stopped mid-call as Strands does: on resume, the call that never got its result
is recorded with the result "Tool was interrupted." (strands/tools/_tool_helpers.py,
`generate_missing_tool_result_content`, status error), then the conversation goes on with "Continue where you
stopped.". The email of that call was in fact sent (the stop lands while the world holds it; the mail service
commits what it received).

What resume does next is the model's to decide: under `retry_interrupted_tools` it asks for the email again and the
resume sends it twice; under `count_results` it goes on to its final answer.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from harness.contract.kit import NEXT_INPUT
from tests.known_answer.adapters import _Base, ask_model

INTERRUPTED = "Tool was interrupted."


class RepairsInterruptedCall(_Base):
    name = "known-repairs-interrupted-call"
    resume_primitive = "record each call left without a result as interrupted, then continue the conversation"

    async def start(self) -> None:
        self.messages: list[dict] = [{"role": "user", "content": self.ctx.prompt}]
        await super().start()

    async def job(self) -> None:
        await self.loop()

    async def loop(self) -> None:
        """Ask; run each tool call and answer it with its result; until the final answer. A call is kept in the
        conversation before it runs, its result only once it returned (a stop in between leaves it unanswered)."""
        async with httpx.AsyncClient(timeout=30) as client:
            while True:
                message = (await ask_model(client, self.ctx.model_base_url, self.messages)).json()["choices"][0]
                self.messages.append(message["message"])
                calls = message["message"].get("tool_calls") or []
                if not calls:
                    return
                for call in calls:
                    fn = call["function"]
                    result = await self.ctx.toolbox.acall(fn["name"], json.loads(fn["arguments"]))
                    self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    async def resume(self) -> None:
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        for message in list(self.messages):
            for call in message.get("tool_calls") or []:
                if call["id"] not in answered:
                    self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": INTERRUPTED})
        self.messages.append({"role": "user", "content": NEXT_INPUT})
        await asyncio.wait_for(self.loop(), 30)
