"""The chat page in headless Chromium, driven over the DevTools protocol: the served trial's browser client.

The page (harness/trial/serve/page/chat.html, served by the app at `/`) does what the Vercel AI SDK's `useChat()` does:
it POSTs the message and reads the answer's stream; its Stop button aborts the fetch (`AbortController.abort()`,
what `useChat().stop()` does). The trial types the message and clicks Send, and at the anchor clicks Stop with the
mouse (Input.dispatchMouseEvent at the button's centre); the stop returns when the page says it stopped.

Chromium is Debian's (/usr/bin/chromium, or STOPBENCH_CHROMIUM), started with --remote-debugging-pipe: the
protocol's JSON messages, each ended by a NUL byte, on the child's fds 3 (to it) and 4 (from it). It is the
user's browser, not the run's: the subject's audit leaves its processes out (harness/trial/audit.py).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from harness.trial import audit

#: how long the page may take to get to a state (loaded, streaming, stopped)
STATE_S = 20.0
POLL_S = 0.005


class BrowserError(RuntimeError):
    """Chromium is missing, or it or the page did not do what was asked."""


def chromium() -> str:
    found = os.environ.get("STOPBENCH_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if not found:
        raise BrowserError("no Chromium found (chromium, chromium-browser, google-chrome or STOPBENCH_CHROMIUM): "
                           "the browser path needs it (Debian: apt-get install chromium)")
    return found


class ChatPage:
    def __init__(self, url: str, workdir: Path, own: Callable[[Coroutine[Any, Any, Any]], asyncio.Task]):
        self.url, self.workdir, self.own = url, workdir, own
        self.proc: subprocess.Popen | None = None
        self.to_browser = -1
        self.waiting: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.session = ""
        self.reading: asyncio.Task | None = None

    async def open(self) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()

        def fds_3_and_4() -> None:  # in the child, before exec: the protocol's pipes where Chromium expects them
            high_r, high_w = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        profile = self.workdir / "chromium-profile"
        log = (self.workdir / "chromium.log").open("ab")
        # its singleton socket lives in TMPDIR, whose path must fit a unix socket's (108 bytes): the system's
        # its crash handler's database under XDG_CONFIG_HOME: in the profile, so its command line names the profile
        env = {**os.environ, "TMPDIR": "/tmp", "XDG_CONFIG_HOME": str(profile / "config")}
        self.proc = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=fds_3_and_4, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        log.close()
        audit.harness_process(self.proc.pid, str(profile))
        os.close(to_r)
        os.close(from_w)
        self.to_browser = to_w
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_r, "rb"))
        self.reading = self.own(self._read(reader))
        target = (await self.call("Target.createTarget", url="about:blank"))["targetId"]
        self.session = (await self.call("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
        await self.call("Page.navigate", url=f"{self.url}/", session=True)
        await self.until("window.chatState === 'idle'")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                raw = await reader.readuntil(b"\0")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                break
            message = json.loads(raw[:-1])
            waiter = self.waiting.pop(message.get("id", -1), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
        for waiter in self.waiting.values():
            if not waiter.done():
                waiter.set_exception(BrowserError("Chromium closed its protocol pipe"))

    async def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        answer = await asyncio.wait_for(future, STATE_S)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def until(self, condition: str) -> None:
        deadline = time.monotonic() + STATE_S
        while not await self.evaluate(condition):
            if time.monotonic() > deadline:
                state = await self.evaluate("window.chatState")
                raise BrowserError(f"the chat page: not {condition} within {STATE_S:g} s (state {state!r})")
            await asyncio.sleep(POLL_S)

    async def click(self, element_id: str) -> None:
        """A mouse click at the element's centre, as a user's."""
        box = await self.evaluate(f"(() => {{ const r = document.getElementById({json.dumps(element_id)})"
                                  ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                            button="left", clickCount=1)

    async def send(self, message: str) -> None:
        """Type the message, click Send; returns once the answer's stream has started."""
        await self.evaluate(f"document.getElementById('message').value = {json.dumps(message)}")
        await self.click("send")
        await self.until("window.chatState === 'streaming' || window.chatState.startsWith('failed')")
        state = await self.evaluate("window.chatState")
        if state != "streaming":
            raise BrowserError(f"the chat page: {state}")

    async def press_stop(self) -> None:
        """Click Stop; returns when the page says it stopped (its fetch aborted)."""
        await self.click("stop")
        await self.until("window.chatState !== 'streaming'")

    async def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                await asyncio.wait_for(self.call("Browser.close"), 5)
            except (BrowserError, TimeoutError, OSError):
                pass
            deadline = time.monotonic() + 5
            while self.proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        os.close(self.to_browser)
        if self.reading is not None:
            self.reading.cancel()
        self.proc = None
