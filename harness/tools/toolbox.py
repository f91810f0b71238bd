"""The one implementation of the scenario tools, sync and async, that every adapter wraps.

Each tool is a plain function with a signature and docstring a framework can introspect. It calls
the world's service for the run and returns the service's JSON answer as a string. No adapter
rewrites these: an adapter that did could make its framework look better than it is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from harness.stop_button import StopButton
from harness.tools.catalogue import COMPENSATION_PATH, TOOL_PARAMETERS, TOOL_SPECS
from harness.vocabulary import SENT_HEADER

# key_policy(tool_name, arguments) -> Idempotency-Key or None
KeyPolicy = Callable[[str, dict[str, Any]], str | None]
# on_result(tool_name, arguments, parsed service answer): for bookkeeping such as saga registries
ResultHook = Callable[[str, dict[str, Any], dict[str, Any]], None]
# on_attempt(tool_name, arguments, Idempotency-Key or None): before the request leaves, so a saga
# knows of calls whose answer never comes back (the caller was cancelled, the service still commits)
AttemptHook = Callable[[str, dict[str, Any], str | None], None]


class ToolError(RuntimeError):
    """The service refused or failed the call; the framework sees it as a failed tool."""


# apost(url, JSON body, headers, timeout_s, unless_pressed=None) -> (status, text): how async calls
# reach the service; it stamps SENT_HEADER as the request leaves (`stamped`; harness.tools.loopback_http
# does it on the write). `unless_pressed` is given only by a caller that asked for it (the reference).
AsyncPost = Callable[..., Awaitable[tuple[int, str]]]


def stamped(headers: dict[str, str], unless_pressed: StopButton | None = None) -> dict[str, str]:
    """`headers` plus SENT_HEADER: time.monotonic_ns() now, the clock of the ledger and the marks.

    A transport calls this as the last thing before the request goes out (its client already made),
    not when the tool was entered: "in flight at the stop" means the call had left by then. Between
    this stamp and the bytes there is only building the request and a connect on loopback. With
    `unless_pressed`, the stamp is ordered against the stop's (StopPressed instead of a later time).
    """
    t = unless_pressed.send_time() if unless_pressed is not None else time.monotonic_ns()
    return {**headers, SENT_HEADER: str(t)}


def _httpx_post(url: str, body: Any, headers: dict[str, str], timeout_s: float,
                unless_pressed: StopButton | None = None) -> tuple[int, str]:
    import httpx  # not at import: the MCP server imports this module and uses harness.tools.loopback_http

    with httpx.Client(timeout=timeout_s, verify=False) as client:
        r = client.post(url, json=body, headers=stamped(headers, unless_pressed))
        return r.status_code, r.text


async def httpx_apost(url: str, body: Any, headers: dict[str, str], timeout_s: float,
                      unless_pressed: StopButton | None = None) -> tuple[int, str]:
    """A client per call: frameworks run async tools on loops of their own choosing."""
    import httpx

    async with httpx.AsyncClient(timeout=timeout_s, verify=False) as client:  # ~1-2 ms: stamp after it
        r = await client.post(url, json=body, headers=stamped(headers, unless_pressed))
        return r.status_code, r.text


def _answer(url: str, status: int, text: str) -> dict[str, Any]:
    if status >= 400:
        raise ToolError(f"{urlsplit(url).path}: HTTP {status}: {text[:200]}")
    return json.loads(text)


class Toolbox:
    """The tools of one run. `sync` and `async_` hold functions named and typed like the tools.

    Clients are made with verify=False: the world is plain http on loopback, and loading the CA
    bundle would add ~30 ms of CPU to every tool call.
    """

    def __init__(self, services_url: str, key_policy: KeyPolicy | None = None,
                 on_result: ResultHook | None = None, timeout_s: float = 30.0,
                 on_attempt: AttemptHook | None = None, apost: AsyncPost = httpx_apost):
        self.services_url = services_url.rstrip("/")
        self.apost = apost
        self.key_policy = key_policy
        self.on_result = on_result
        self.on_attempt = on_attempt
        self.timeout_s = timeout_s
        self.sync: dict[str, Callable[..., str]] = {n: self._make_sync(n) for n in TOOL_SPECS}
        self.async_: dict[str, Callable[..., Awaitable[str]]] = {n: self._make_async(n) for n in TOOL_SPECS}

    def _request(self, name: str, arguments: dict[str, Any], idempotency_key: str | None):
        url = f"{self.services_url}/{TOOL_SPECS[name][0]}"
        key = idempotency_key or (self.key_policy(name, arguments) if self.key_policy else None)
        headers = {"Idempotency-Key": key} if key else {}
        if self.on_attempt:
            self.on_attempt(name, arguments, key)
        return url, headers

    def call(self, name: str, arguments: dict[str, Any], idempotency_key: str | None = None, *,
             unless_pressed: StopButton | None = None) -> str:
        """One tool call. `unless_pressed`: raise StopPressed rather than send after that button was
        pressed (exactly ordered: see harness.stop_button); frameworks' tools never pass it."""
        url, headers = self._request(name, arguments, idempotency_key)
        answer = _answer(url, *_httpx_post(url, arguments, headers, self.timeout_s, unless_pressed))
        if self.on_result:
            self.on_result(name, arguments, answer)
        return json.dumps(answer)

    async def acall(self, name: str, arguments: dict[str, Any], idempotency_key: str | None = None, *,
                    unless_pressed: StopButton | None = None) -> str:
        url, headers = self._request(name, arguments, idempotency_key)
        gate = {"unless_pressed": unless_pressed} if unless_pressed is not None else {}
        answer = _answer(url, *await self.apost(url, arguments, headers, self.timeout_s, **gate))
        if self.on_result:
            self.on_result(name, arguments, answer)
        return json.dumps(answer)

    def compensate(self, kind: str, effect_id: str) -> dict[str, Any]:
        """Undo a committed effect (recall the email, close the PR, cancel the meeting, delete the post)."""
        url = f"{self.services_url}/{COMPENSATION_PATH[kind]}"
        return _answer(url, *_httpx_post(url, {"effect_id": effect_id}, {}, self.timeout_s))

    async def acompensate(self, kind: str, effect_id: str) -> dict[str, Any]:
        url = f"{self.services_url}/{COMPENSATION_PATH[kind]}"
        return _answer(url, *await self.apost(url, {"effect_id": effect_id}, {}, self.timeout_s))

    def _make_sync(self, name: str) -> Callable[..., str]:
        def tool(*args: str, **kwargs: str) -> str:
            return self.call(name, bind(name, args, kwargs))

        return _dress(tool, name)

    def _make_async(self, name: str) -> Callable[..., Awaitable[str]]:
        async def tool(*args: str, **kwargs: str) -> str:
            return await self.acall(name, bind(name, args, kwargs))

        return _dress(tool, name)


def bind(name: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    """A tool's arguments by name, as its signature binds them; TypeError for a wrong set."""
    params = TOOL_PARAMETERS[name]
    bound = dict(zip(params, args, strict=False))
    bound.update(kwargs)
    if set(bound) != set(params):
        raise TypeError(f"{name}() takes {', '.join(params)}; got {', '.join(sorted(bound))}")
    return bound


def _dress(fn: Callable, name: str) -> Callable:
    """Give a generic closure the tool's real name, signature and docstring for introspection."""
    import inspect

    _, params, description = TOOL_SPECS[name]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = description + "\n\nArgs:\n" + "".join(f"    {p}: {d}\n" for p, d in params.items())
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str) for p in params],
        return_annotation=str,
    )
    fn.__annotations__ = {**{p: str for p in params}, "return": str}
    return fn
