"""The served trial from the subject's side: the server process, and the client that stops its run as a UI does.

The subject drives it as it drives an adapter (launch, start, stop, wait, resume, close, held): `launch` starts the
server process (harness/trial/serve/server.py) and waits for its port; `start` is the page sending its message (POST
/chat, read as an event stream until `started`); `stop` is the client's stop (`client_stop`): `disconnect` closes
the stream's connection, `cancel_endpoint` POSTs /cancel and reads the stream on, `abort_fetch` presses the chat
page's Stop in headless Chromium (harness/trial/serve/browser.py). The subject stamps `stop_called` at the client's
press: every "after stop" counts from there. `wait` is the hosted run's end, `held` what the server process holds (its
audit), `close` closes the adapter in the server, then ends the server (SIGTERM, as a deploy stops an app).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from harness import python_module
from harness.contract.adapter import Adapter, HostHoldings, NoResume, TrialContext
from harness.contract.protocol import ProtocolAdapter, declaration_env
from harness.scenario import Scenario
from harness.tools.loopback_http import LoopbackClient, open_stream
from harness.trial.activity import HELD, HELD_TASKS, HELD_THREADS, held_work
from harness.trial.serve.page import PAGE
from harness.trial.serve.paths import ServePath
from harness.trial.spec import SubjectPlan

#: names the fd a JS adapter process writes its port to when it is to serve over HTTP (js/stopbench-tools)
SERVE_HTTP_ENV = "STOPBENCH_SERVE_HTTP"
#: how long the server may take to be ready (import its framework, launch the adapter)
READY_S = 60.0
#: how long the server has to exit after SIGTERM before it is killed
EXIT_S = 3.0


class ServedRunFailed(RuntimeError):
    """The hosted run's job failed (the message: its error, `Type: message (at file:line)`), or the server answered
    an error."""


class ServedAdapter:
    """The adapter's run behind a server; the trial's stop is the client's."""

    notifies_stop_handled = False  # the stop counts from the client's press

    def __init__(self, ctx: TrialContext, plan: SubjectPlan, scenario: Scenario, path: ServePath,
                 adapter_cls: type[Adapter], own: Callable[[Coroutine[Any, Any, Any]], asyncio.Task]):
        self.ctx, self.plan, self.scenario, self.path, self.own = ctx, plan, scenario, path, own
        self.adapter_cls = adapter_cls
        self.node_baseline: set[str] = set()  # a Node server's holdings before the run
        self.mode = ctx.mode
        self.http = LoopbackClient(timeout_s=3600)
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.writer: asyncio.StreamWriter | None = None  # the stream's connection, while the client holds it
        self.reading: asyncio.Task | None = None
        self.browser: Any = None  # the chat page in Chromium, for abort_fetch

    async def launch(self) -> None:
        read_fd, write_fd = os.pipe()
        try:  # Popen, not asyncio's: no child-watcher thread of the harness's in the subject
            self.proc = self._node(write_fd) if self.path.runtime == "node" else self._python(write_fd)
        finally:
            os.close(write_fd)
        line = await asyncio.wait_for(self._read_ready(read_fd), READY_S)
        if not line:
            code = await self._exited(EXIT_S)
            raise ServedRunFailed(f"serve path {self.path.name}: the server exited ({code}) before it was ready; "
                                  "its output is in the trial's subject-output.log")
        self.url = f"http://127.0.0.1:{json.loads(line)['port']}"
        if self.path.runtime == "node":
            r = await self.http.post(f"{self.url}/harness/configure", {
                **ProtocolAdapter(self.ctx)._start_params(), "run_url": self.plan.run.run_url, "page": str(PAGE)})
            r.raise_for_status()
            self.node_baseline = {i["id"] for i in (await self.http.get(f"{self.url}/harness/audit")).json()["held"]}
        if self.path.browser:
            from harness.trial.serve.browser import ChatPage

            self.browser = ChatPage(self.url, self.ctx.workdir, self.own)
            await self.browser.open()

    async def _exited(self, seconds: float) -> int | None:
        """The server's exit code once it exited within `seconds`, else None."""
        assert self.proc is not None
        deadline = time.monotonic() + seconds
        while (code := self.proc.poll()) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return code

    def _python(self, ready_fd: int) -> subprocess.Popen:
        """The Python server hosting the adapter (harness/trial/serve/server.py), importing what the subject does."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}
        return subprocess.Popen([*python_module("trial.serve.server"), self.plan.to_json(),
                                 json.dumps(self.scenario.raw), str(os.getppid()), str(ready_fd)],
                                pass_fds=[ready_fd], env=env)

    def _node(self, ready_fd: int) -> subprocess.Popen:
        """The JS adapter's own process, as an HTTP handler (js/stopbench-tools/http_host.mjs)."""
        cls = self.adapter_cls
        if not issubclass(cls, ProtocolAdapter):
            raise ServedRunFailed(f"serve path {self.path.name}: a Node server hosts a JS adapter, not {cls.name}")
        return subprocess.Popen(list(cls.command), cwd=cls.folder, pass_fds=[ready_fd],
                                env={**os.environ, **cls.environment, **declaration_env(cls),
                                     SERVE_HTTP_ENV: str(ready_fd)},
                                stdin=subprocess.DEVNULL)

    @staticmethod
    async def _read_ready(fd: int) -> bytes:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb"))
        try:
            return await reader.readline()
        finally:
            transport.close()

    async def start(self) -> None:
        body = {"message": self.ctx.prompt}
        if self.browser is not None:
            await self.browser.send(body["message"])
            return
        status, _, writer, lines = await open_stream(f"{self.url}/chat", body)
        self.writer = writer
        if status >= 400:
            writer.close()
            raise ServedRunFailed(f"POST /chat: HTTP {status}")
        events = _events(lines)
        first = await anext(events)
        if first[0] != "started":
            raise ServedRunFailed(f"POST /chat: expected the `started` event, got {first}")
        self.reading = self.own(self._read_to_end(events))

    async def _read_to_end(self, events: AsyncIterator[tuple[str, str]]) -> None:
        """Read the stream to its end, as the page does, then let its connection go."""
        await _drain(events)
        self._disconnect()

    async def stop(self) -> None:
        how = self.path.client_stop
        if how == "disconnect":
            self._disconnect()
        elif how == "cancel_endpoint":
            r = await self.http.post(f"{self.url}/cancel", {})
            r.raise_for_status()
        elif how == "abort_fetch":
            await self.browser.press_stop()
        else:
            raise ValueError(f"client stop {how!r}")

    def _disconnect(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def wait(self) -> None:
        r = await self.http.post(f"{self.url}/harness/wait", {})
        r.raise_for_status()
        ended = r.json()
        if ended["ended"] == "cancelled":
            raise asyncio.CancelledError("the served run was cancelled")
        if ended["ended"] == "failed":  # the job's own error, as the server's process described it
            raise ServedRunFailed(ended["error"])

    async def resume(self) -> None:
        r = await self.http.post(f"{self.url}/harness/resume", {})
        answer = r.json()
        if r.status_code >= 400:
            raise ServedRunFailed(f"resume in the server: {answer.get('error')}")
        if not answer["resumed"]:
            raise NoResume(answer["reason"])

    async def reported_usage(self) -> int | None:
        """Not asked of a served run (the framework's usage is in the server)."""
        return None

    def exit_status(self) -> int | None:
        return None

    def apparatus(self) -> set[int]:
        """The browser is the user's (harness/trial/serve/browser.py leaves it out of the audit itself)."""
        return set()

    async def held(self) -> HostHoldings | None:
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            r = await self.http.get(f"{self.url}/harness/audit", timeout=5)
            served = r.json()
        except (OSError, TimeoutError, ValueError) as e:
            return HostHoldings(self.proc.pid, [], error=f"the server's audit: {e}")
        if self.path.runtime == "node":
            served = node_audit([i for i in served["held"] if i["id"] not in self.node_baseline], served["egress"])
        return HostHoldings(self.proc.pid, [], served=served)

    async def close(self) -> None:
        """Close the adapter in the server, then end the server; an error of either is close()'s."""
        error = None
        self._disconnect()
        if self.browser is not None:
            await self.browser.close()
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                r = await self.http.post(f"{self.url}/harness/close", {}, timeout=30)
                if r.status_code >= 400:
                    error = ServedRunFailed(f"close in the server: {r.json().get('error')}")
            except OSError as e:
                error = ServedRunFailed(f"close in the server: {e}")
            self.proc.send_signal(signal.SIGTERM)
            if await self._exited(EXIT_S) is None:
                self.proc.kill()
                self.proc.wait()
                error = error or ServedRunFailed(f"the server did not exit within {EXIT_S:g} s of SIGTERM; killed")
        if self.reading is not None:
            self.reading.cancel()
        if error is not None:
            raise error


def node_audit(held: list[dict[str, str]], egress: list[str]) -> dict[str, Any]:
    """What a Node server holds (the kit's audit: timers, immediates, requests, sockets, workers), in the served
    audit's terms (harness/trial/serve/hosted.py `audit`), by the one rule of idle and scheduled work."""
    workers = [{"ident": i["id"], "name": i["what"], "daemon": False, "activity": str(HELD[i["kind"]])}
               for i in held if i["kind"] in HELD_THREADS]
    left = {"threads": workers, "threads_busy": workers,
            "tasks": [f"{i['kind']}:{i['what']}" for i in held if i["kind"] in HELD_TASKS],
            "sockets": [{"held": i["what"]} for i in held if i["kind"] == "socket"], "egress": egress}
    return {"left": left, "work": [{"kind": w.kind, "what": w.what, "activity": str(w.activity)}
                                   for w in held_work(held)]}


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as (event, data), from the stream's lines."""
    event, data = "message", ""
    async for line in lines:
        if not line:
            if data or event != "message":
                yield event, data
            event, data = "message", ""
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
    return


async def _drain(events: AsyncIterator[tuple[str, str]]) -> None:
    """Read the stream to its end, as the page does (a closed connection ends it)."""
    try:
        async for _ in events:
            pass
    except (OSError, asyncio.IncompleteReadError, ValueError):
        pass
