"""Adapters that commit one email twice, for two different reasons (issue #11, case 5): a retry within the run
(no resume at all), and a resume that sends again what was sent before it. Only the second is a resume
repeating an effect.

Both send their emails and then ask the model once, so the stop (at `on:llm_request:1`) comes after the
emails have committed, whatever the machine's load.
"""

from __future__ import annotations

import asyncio

import httpx

from tests.known_answer.adapters import _Base

EMAIL = {"to": "board@example.com", "subject": "Q3 report", "body": "Please find the Q3 report attached."}


class _EmailsThenAsks(_Base):
    sends = 1

    async def job(self) -> None:
        for _ in range(self.sends):
            await self.ctx.toolbox.acall("send_email", EMAIL)
        async with httpx.AsyncClient(timeout=30) as client:
            await client.post(f"{self.ctx.model_base_url}/chat/completions", json={
                "model": "m", "messages": [{"role": "user", "content": self.ctx.prompt}]})
        await asyncio.Event().wait()


class RetriesEmail(_EmailsThenAsks):
    """Sends the same email twice (a retry, no idempotency key), and has no resume."""

    name = "known-retries-email"
    sends = 2


class ResumeResendsEmail(_EmailsThenAsks):
    """Sends one email; its resume sends the very same email again (as tests.known_answer.adapters'
    ResumeRepeatsEffect, stopped at an event anchor instead of a time)."""

    name = "known-resume-resends-email"
    resume_primitive = "send the email again"

    async def resume(self) -> None:
        await self.ctx.toolbox.acall("send_email", EMAIL)
