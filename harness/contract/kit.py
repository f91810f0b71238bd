"""The adapter kit: the plumbing every adapter would otherwise write again.

- `KitAdapter`: the base class of an adapter whose run is one job (the asyncio task, or the future of a thread,
  that runs the framework's call). It owns `self.job`, one stop flag (`self.stop_pressed`), `wait()`, the common
  `task_cancel` button, `close()` (the job, then what was registered with `on_close`), and the model client's
  settings (`model_client(AsyncOpenAI)`, `client_settings()`). An adapter on it is its framework's calls plus
  its buttons.
- `Flag`: a flag set from the loop or from any thread, read anywhere, awaited on the loop.
- `NEXT_INPUT`: what the user says to go on after a stop, where a framework's resume takes a new message.
- `in_own_thread(fn, *args)`: blocking user code on a thread of its own (a web server's request thread),
  awaited from the loop.
- `OwnedContext`: an async context manager (an MCP client session, a server object) entered and exited by
  one task of its own, as anyio's cancel scopes require; it lives from `open()` to `close()`, like an app's.
- `until_done(*futures)`: wait for the job (or anything else) to end, whatever it ends with.

With `TrialContext.tools` (the tool functions of the trial's style), `TrialContext.mcp` (the MCP server's
stdio parameters) and the stop dispatch of `Adapter.stop()` (`stop_<mode>` methods), an adapter is the
framework's documented calls plus its stop buttons.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from harness.contract.adapter import Adapter, TrialContext

T = TypeVar("T")

#: what the user types to go on after a stop, where the framework's resume is a new turn of the conversation
NEXT_INPUT = "Continue where you stopped."
#: the key every model client sends: the world takes any
API_KEY = "x"


def warm(*modules: str) -> None:
    """Import what a framework loads lazily on its first use, in `prepare()`: forked subjects then start warm, as
    an app that has served a request is. A module the installed release does not have is skipped. (Not a module
    that starts threads when imported: the parent forks, and its subjects must not inherit threads.)"""
    for module in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def in_own_thread(fn: Callable[..., Any], *args: Any, name: str = "stopbench-caller") -> asyncio.Future:
    """Run blocking user code on a thread of its own (as a web server's request thread would), ending
    with the call; the future settles on the calling loop."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if not fut.done():
            fut.set_exception(error) if error is not None else fut.set_result(result)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as e:  # handed to the awaiting task
            loop.call_soon_threadsafe(settle, None, e)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


async def until_done(*futures: asyncio.Future) -> None:
    """Wait until every one has ended (returned, raised or was cancelled), raising nothing."""
    await asyncio.wait(set(futures))


class OwnedContext(Generic[T]):
    """`async with make(): ...` held open by a task of its own until `close()`.

    MCP clients (anyio task groups and cancel scopes) must be exited in the task that entered them; an
    adapter's start() and close() run in different tasks, so a task owns the context in between.
    """

    def __init__(self) -> None:
        self.value: T | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._owner: asyncio.Task | None = None

    @classmethod
    async def open(cls, make: Callable[[], contextlib.AbstractAsyncContextManager[T]]) -> OwnedContext[T]:
        self = cls()
        self._owner = asyncio.create_task(self._own(make))
        await self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    async def _own(self, make: Callable[[], contextlib.AbstractAsyncContextManager[T]]) -> None:
        try:
            async with make() as value:
                self.value = value
                self._ready.set()
                await self._closing.wait()
        except BaseException as e:  # handed to open(), or dropped once open
            self._error = e
            self._ready.set()

    async def close(self) -> None:
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._owner
            self._owner = None


class Flag:
    """A flag set and cleared from the loop or from any thread (a sync handler's, a framework's callback), read
    anywhere (`is_set()`), and awaited on the loop (`await flag.wait()`): threading.Event's, with an awaitable."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        with self._lock:
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_settle, fut)

    def clear(self) -> None:
        self._event.clear()

    async def wait(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append((asyncio.get_running_loop(), fut))
        await fut


def _settle(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class KitAdapter(Adapter):
    """An adapter whose run is one job, `self.job`: set it in start() (`asyncio.create_task(...)`, or
    `in_own_thread(...)` for a sync caller) and again in resume().

    The rule of wait(): it only watches. It awaits the job through `asyncio.shield`, so a waiter that is cancelled
    (a deadline, the loop shutting down) never cancels the job: only a stop button or close() ends it.
    """

    job: asyncio.Future | None = None
    #: close() cancels a job still running (an app shutting down); False leaves it to itself, for a framework
    #: whose users close their clients under a run they stopped waiting for
    cancel_on_close: ClassVar[bool] = True

    def __init__(self, ctx: TrialContext):
        super().__init__(ctx)
        #: the one stop flag: a button that asks the job's own loop or callbacks to stop sets it; resume clears it
        self.stop_pressed = Flag()
        self._closers: list[Callable[[], Any]] = []

    async def wait(self) -> None:
        await asyncio.shield(self.job)

    async def until_done(self) -> None:
        """Until the job has ended, however it ended."""
        await until_done(self.job)

    async def until(self, flag: Flag | asyncio.Event) -> None:
        """Until `flag` is set or the job has ended."""
        waiting = asyncio.ensure_future(flag.wait())
        await asyncio.wait({waiting, self.job}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()

    async def stop_task_cancel(self) -> None:
        """task.cancel() on the job; returns once it has ended."""
        self.job.cancel()
        await until_done(self.job)

    async def flag_and_wait(self) -> None:
        """Set the stop flag (the job's loop, or a callback, checks it); returns once the job has ended."""
        self.stop_pressed.set()
        await until_done(self.job)

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Call `closer()` (awaited if it returns an awaitable) in close(), after the job: last registered first."""
        self._closers.append(closer)

    async def close(self) -> None:
        """Cancel the job if it is still running (cancel_on_close) and wait until it has ended; then the closers
        (on_close)."""
        if self.cancel_on_close and self.job is not None and not self.job.done():
            self.job.cancel()
            await until_done(self.job)
        while self._closers:
            result = self._closers.pop()()
            if inspect.isawaitable(result):
                await result

    # --- the model client: its settings stated once -------------------------------------------------

    def client_settings(self, url: str = "base_url") -> dict[str, Any]:
        """What every model client of a trial is built with, as keyword arguments: the world's model API under
        the framework's name for it (`url`: base_url, api_base, ...) and the key. Nothing else: retries, back-off
        and timeouts stay the client's defaults, as users run it."""
        return {url: self.ctx.model_base_url, "api_key": API_KEY}

    def model_client(self, make: Callable[..., T], url: str = "base_url", **kwargs: Any) -> T:
        """`make(**client_settings(url), **kwargs)`: the framework's model client (AsyncOpenAI, ChatOpenAI, LLM,
        ...) with the settings every trial's client has. Close it with `on_close` where the framework says to."""
        return make(**self.client_settings(url), **kwargs)
