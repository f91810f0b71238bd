"""Clients of known behaviour against a provider that rate-limits one request (Retry-After 1 s): what
each does with its pending retry when the stop lands in the back-off is known by construction.

They talk to the world's model API directly (no framework), so what they do is not in doubt.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import yaml

from harness.tools.catalogue import openai_tool_definitions
from tests.known_answer.adapters import _Base, ask_model, model_loop

#: draft a document, then the request that should ask for the email is rate limited once, then the summary
SCENARIO: dict[str, Any] = {
    "name": "one_rate_limit",
    "prompt": "Draft the Q3 report, send it to board@example.com and give me a short summary.",
    "latency_ms": {"docs": 10, "email": 50},
    "turns": [
        {"text_tokens": 4, "tool_calls": [{"name": "draft_document",
                                           "arguments": {"title": "Q3 report", "topic": "Q3 results"}}]},
        {"fault": {"status": 429, "retry_after_s": 1},
         "tool_calls": [{"name": "send_email", "arguments": {"to": "board@example.com", "subject": "Q3 report",
                                                             "body": "Please find the Q3 report attached."}}]},
        {"text_tokens": 20},
    ],
    "offsets": ["on:llm_error:1"],
}


def scenarios_dir(root: Path, retry_after_s: int = 1) -> Path:
    """A scenarios folder holding only SCENARIO, its 429 asking for `retry_after_s`."""
    root.mkdir(parents=True, exist_ok=True)
    scenario = {**SCENARIO, "turns": [dict(t) for t in SCENARIO["turns"]]}
    scenario["turns"][1]["fault"] = {"status": 429, "retry_after_s": retry_after_s}
    (root / f"{SCENARIO['name']}.yaml").write_text(yaml.safe_dump(scenario))
    return root


def _retry_after(r: httpx.Response) -> float:
    return float(r.headers.get("retry-after", "1"))


class _Loop(_Base):
    """A correct agent loop whose client retries a 429 after its Retry-After; `backoff` is how it waits."""

    async def job(self) -> None:
        await model_loop(self.ctx, self.ctx.toolbox.acall, ask=self.ask)

    async def ask(self, client: httpx.AsyncClient, url: str, messages: list[dict[str, Any]]) -> httpx.Response:
        r = await ask_model(client, url, messages)
        return await self.backoff(client, url, messages, _retry_after(r)) if r.status_code == 429 else r

    async def backoff(self, client: httpx.AsyncClient, url: str, messages: list[dict[str, Any]],
                      seconds: float) -> httpx.Response:
        await asyncio.sleep(seconds)  # cancelled with the job
        return await ask_model(client, url, messages)


class HonoursStopInBackoff(_Loop):
    """The stop cancels the job while it sleeps out the Retry-After: the retry never goes out."""

    name = "known-honours-stop-in-backoff"


class RetriesThroughStop(_Loop):
    """Its stop button does nothing: the retry goes out after the back-off and the whole job is done."""

    name = "known-retries-through-stop"

    async def stop_cancel(self) -> None:
        return None


class RetryOutlivesStop(_Loop):
    """The retry waits on a timer thread of its own: the stop cancels the job, the timer still sends the
    retry (billed) and nobody reads the answer, so nothing comes of it."""

    name = "known-retry-outlives-stop"

    async def backoff(self, client: httpx.AsyncClient, url: str, messages: list[dict[str, Any]],
                      seconds: float) -> httpx.Response:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[httpx.Response] = loop.create_future()

        def retry() -> None:
            r = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": messages,
                                                            "tools": openai_tool_definitions()}, timeout=30)
            loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(r))

        threading.Timer(seconds, retry).start()  # a Timer thread: the audit sees it waiting, as scheduled work
        return await answer
