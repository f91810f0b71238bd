"""The Python serving path: a Starlette app that streams the hosted run as server-sent events (sse-starlette, under
uvicorn), as apps deploy a framework behind a chat page.

`POST /chat` starts the run and answers with the event stream: `started`, then `done` with the run's end. The client
stops it one of two ways. It goes away (an EventSource closed, a fetch aborted): uvicorn tells the app
`http.disconnect`, sse-starlette cancels the stream's generator, and the generator's `except CancelledError` is
where the app reacts (sse-starlette's documented place for cleanup): the shipped app presses the framework's stop
there, shielded from the cancellation that brought it. Or the page calls `POST /cancel`, which presses the same
button and answers when it returns; the stream then ends when the run does. `GET /` is the chat page
(harness/trial/serve/page/chat.html). `/harness/...` is the trial's own channel (wait, resume, close, audit), no part
of the app's surface.

`app(hosted, on_disconnect, on_start)` lets a planted server react otherwise (tests/known_answer/served.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from harness.trial.serve.hosted import HostedRun, describe
from harness.trial.serve.page import PAGE

Reaction = Callable[[HostedRun], Awaitable[None]]


async def press_stop(hosted: HostedRun) -> None:
    """The app's reaction to a disconnect: the framework's stop, as the cancel endpoint presses it."""
    await hosted.stop("disconnect")


async def nothing(hosted: HostedRun) -> None:
    """No hook at the run's start."""


def app(hosted: HostedRun, on_disconnect: Reaction = press_stop, on_start: Reaction = nothing) -> Starlette:
    async def events() -> AsyncIterator[dict[str, str]]:
        try:
            yield {"event": "started", "data": "{}"}
            yield {"event": "done", "data": json.dumps(await hosted.ended())}
        except asyncio.CancelledError:
            with anyio.CancelScope(shield=True):  # the disconnect cancelled us: the reaction must still run
                await on_disconnect(hosted)
            raise

    async def chat(request: Request) -> EventSourceResponse | JSONResponse:
        try:
            await hosted.start()
            await on_start(hosted)
        except Exception as e:
            return JSONResponse({"error": describe(e)}, status_code=500)
        return EventSourceResponse(events())

    async def cancel(request: Request) -> JSONResponse:
        await hosted.stop("cancel")
        return JSONResponse({})

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE.read_text())

    return Starlette(routes=[Route("/", page), Route("/chat", chat, methods=["POST"]),
                             Route("/cancel", cancel, methods=["POST"]), *harness_routes(hosted)])


def harness_routes(hosted: HostedRun) -> list[Route]:
    """The trial's channel to the hosted run (harness/trial/serve/client.py): every served app mounts it."""

    async def wait(request: Request) -> JSONResponse:
        return JSONResponse(await hosted.ended())

    async def resume(request: Request) -> JSONResponse:
        try:
            return JSONResponse(await hosted.resume())
        except Exception as e:
            return JSONResponse({"error": describe(e)}, status_code=500)

    async def close(request: Request) -> JSONResponse:
        try:
            await hosted.close()
        except Exception as e:
            return JSONResponse({"error": describe(e)}, status_code=500)
        return JSONResponse({})

    async def audit(request: Request) -> JSONResponse:
        server, client = request.scope["server"], request.scope["client"]
        return JSONResponse(hosted.audit((server[1], client[1])))

    return [Route("/harness/wait", wait, methods=["POST"]), Route("/harness/resume", resume, methods=["POST"]),
            Route("/harness/close", close, methods=["POST"]), Route("/harness/audit", audit)]
