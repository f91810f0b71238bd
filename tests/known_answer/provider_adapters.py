"""Planted adapters on each provider's wire, through its official SDK (kept apart from adapters.py: a reproducer
inlines that module, and these import the SDKs' planted clients)."""

from __future__ import annotations

import asyncio
import threading

from tests.known_answer.adapters import _Base, _forever


class LeavesStreamAtStop(_Base):
    """On the trial's provider, through that provider's SDK: reads READ text tokens of one streamed answer, and
    closes the stream when stop is pressed (tests/known_answer/providers.py `read_then_leave`). What the world
    bills after that is the run's billing profile."""

    name = "known-leaves-stream-at-stop"
    providers = ("openai", "anthropic", "gemini")
    #: the text tokens it reads before it waits for the stop
    READ = 3

    @classmethod
    def prepare(cls) -> None:
        """The three SDKs, imported in the parent (seconds of CPU a subject's loop would otherwise spend)."""
        import tests.known_answer.providers  # noqa: F401

    async def job(self) -> None:
        from harness.providers import PROVIDERS
        from tests.known_answer.providers import read_then_leave

        route = {"openai": "chat"}.get(self.ctx.provider, self.ctx.provider)
        run = {PROVIDERS[self.ctx.provider].base_url_key: self.ctx.model_base_url}
        self.stopped = threading.Event()
        await asyncio.to_thread(read_then_leave, route, run, self.READ, self.stopped)
        await _forever()

    async def stop_cancel(self) -> None:
        self.stopped.set()
        self.task.cancel()


class LeavesStreamReportsWhatItRead(LeavesStreamAtStop):
    """The same client, with a usage account of what it read (as frameworks that add up the streamed chunks'
    usage do): it says READ output tokens for the stopped run, whatever the provider went on to bill."""

    name = "known-leaves-stream-reports-read"

    async def reported_usage(self) -> int | None:
        return self.READ
