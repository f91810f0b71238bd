"""The adapter kit: the plumbing every adapter would otherwise write again.

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
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


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
