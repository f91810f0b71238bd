"""Adapters with known, deliberate behaviour: the harness must report exactly what they plant.

They talk to the world directly (no framework) so that what they do is not in doubt.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from harness.contract.adapter import Adapter
from harness.tools.catalogue import openai_tool_definitions

EMAIL = {"to": "ops@example.com", "subject": "leak", "body": "sent after stop"}


async def _forever() -> None:
    await asyncio.Event().wait()


Ask = Callable[[httpx.AsyncClient, str, list], Awaitable[httpx.Response]]


async def ask_model(client: httpx.AsyncClient, url: str, messages: list) -> httpx.Response:
    """One Chat Completions request with the trial's tools."""
    return await client.post(f"{url}/chat/completions", json={
        "model": "m", "messages": messages, "tools": openai_tool_definitions()})


async def model_loop(ctx, call_tool: Callable[[str, dict], Awaitable[str]], ask: Ask = ask_model) -> None:
    """A complete, correct agent loop straight on the model API: `ask`, run each tool call through
    `call_tool(name, arguments)`, answer with its result, until the model gives its final answer."""
    messages = [{"role": "user", "content": ctx.prompt}]
    async with httpx.AsyncClient(timeout=30) as client:
        while True:
            r = await ask(client, ctx.model_base_url, messages)
            message = r.json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                return
            for call in message["tool_calls"]:
                fn = call["function"]
                result = await call_tool(fn["name"], json.loads(fn["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


class _Base(Adapter):
    stop_modes = {"cancel": "cancel the job task"}
    tool_styles = ("async",)

    async def start(self) -> None:
        self.task = asyncio.create_task(self.job())

    async def job(self) -> None:
        await _forever()

    async def stop_cancel(self) -> None:
        self.task.cancel()

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        pass


class LeaksOneEmail(_Base):
    """stop() returns at once; 50 ms later a thread it started sends exactly one email."""

    name = "known-leaks-one-email"

    async def stop_cancel(self) -> None:
        self.task.cancel()

        def late() -> None:
            time.sleep(0.05)
            self.ctx.toolbox.call("send_email", EMAIL)

        threading.Thread(target=late, daemon=True).start()


class LeaksEveryOtherTrial(_Base):
    """A correct agent loop whose stop cancels it; in its 1st, 3rd, 5th... trial of a run a thread then sends one
    email. The trials count themselves in `counter` (a file the test names; one trial at a time): repetitions
    that disagree by design."""

    name = "known-leaks-every-other-trial"
    counter: Path | None = None

    async def job(self) -> None:
        await model_loop(self.ctx, self.ctx.toolbox.acall)

    async def stop_cancel(self) -> None:
        self.task.cancel()
        assert self.counter is not None, "the test names the counter file"
        n = int(self.counter.read_text() or 0) + 1 if self.counter.exists() else 1
        self.counter.write_text(str(n))
        if n % 2:
            threading.Thread(target=lambda: (time.sleep(0.05), self.ctx.toolbox.call("send_email", EMAIL)),
                             daemon=True).start()


class IgnoresStop(_Base):
    """A complete, correct agent loop whose stop button does nothing at all."""

    name = "known-ignores-stop"

    async def job(self) -> None:
        await model_loop(self.ctx, self.ctx.toolbox.acall)

    async def stop_cancel(self) -> None:
        return None


class LeavesChildAndThread(_Base):
    """Starts a child process and a busy thread, and never ends either (not even in close)."""

    name = "known-leaves-child-and-thread"

    async def start(self) -> None:
        await super().start()
        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

        def busy() -> None:
            while True:
                time.sleep(0.01)

        threading.Thread(target=busy, name="known-leaked-thread", daemon=True).start()


class HangsInStop(_Base):
    """stop() blocks the event loop and never returns (a sync call that waits forever)."""

    name = "known-hangs-in-stop"

    async def stop_cancel(self) -> None:
        time.sleep(3600)


class ResumeRepeatsEffect(_Base):
    """Sends one email, is stopped, and on resume sends the very same email again (no idempotency key)."""

    name = "known-resume-repeats"
    resume_primitive = "start the job from scratch"

    async def job(self) -> None:
        await self.ctx.toolbox.acall("send_email", EMAIL)
        await _forever()

    async def resume(self) -> None:
        await self.ctx.toolbox.acall("send_email", EMAIL)


class SpawnsChildAndCleansUp(_Base):
    """Starts a child process and ends it in stop(): nothing may be reported as left."""

    name = "known-cleans-up"

    async def start(self) -> None:
        await super().start()
        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    async def stop_cancel(self) -> None:
        self.task.cancel()
        self.child.kill()
        self.child.wait()


class CancelsEmailInFlight(_Base):
    """The job sends one email and stop() cancels the call while it is in flight: the client goes
    away, the service commits anyway, and no answer ever reaches the tool's caller."""

    name = "known-cancels-email-in-flight"

    async def job(self) -> None:
        await self.ctx.toolbox.acall("send_email", EMAIL)
        await _forever()


class NeedsAFutureRelease(_Base):
    """Its one mode's primitive came in a release of pytest that does not exist yet: unsupported here."""

    name = "known-needs-a-future-release"
    modes_since = {"cancel": ("pytest", "999.0")}


class FailsToStart(_Base):
    """start() raises: the trial fails in its `start` step."""

    name = "known-fails-to-start"

    async def start(self) -> None:
        raise RuntimeError("no job today")


class StopLeavesJobRunning(_Base):
    """stop() returns at once and does nothing: the job never ends, the trial hangs in its `wait` step."""

    name = "known-stop-leaves-job-running"

    async def stop_cancel(self) -> None:
        return None


class LeavesTempFiles(_Base):
    """As a framework that keeps lock files in the temporary folder: one written by itself (tempfile), one by a
    child process ($TMPDIR), each named with the run id, neither ever removed."""

    name = "known-leaves-temp-files"

    async def start(self) -> None:
        import subprocess
        import tempfile

        run = self.ctx.run_id
        tempfile.NamedTemporaryFile(prefix=f"known-lock-{run}-", suffix=".lock", delete=False).close()
        subprocess.run(["sh", "-c", f'touch "${{TMPDIR:-/tmp}}/known-child-{run}.lock"'], check=True)
        await super().start()


class PrintsALot(_Base):
    """As a framework that prints its progress: lines on stdout and stderr, and a child's line, at start."""

    name = "known-prints-a-lot"

    async def start(self) -> None:
        for i in range(3):
            print(f"framework says {i}", flush=True)
            print(f"framework warns {i}", file=sys.stderr, flush=True)
        subprocess.run(["sh", "-c", "echo its helper says hi"], check=True)
        await super().start()

