"""The ways a run is served and stopped by its client (`--serve PATH`), declared once.

A path names the server (an ASGI app factory, `module:attr`, that the server process builds around the hosted run:
harness/trial/serve/server.py) and the client's stop (how the page stops it). `in-process` is no server at all: the
harness presses the framework's button in the subject, as every row before the serving dimension did.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from harness.vocabulary import IN_PROCESS

__all__ = ["IN_PROCESS", "CLIENT_STOPS", "PATHS", "ServePath", "ServePathError", "serve_path", "serving_versions"]

#: what the client does to stop, as a UI does it
CLIENT_STOPS = {
    "disconnect": "the client closes the stream's connection (an EventSource closed, a plain HTTP client gone)",
    "cancel_endpoint": "the page POSTs the server's cancel endpoint and reads the stream to its end",
    "abort_fetch": "the page's Stop aborts its fetch (AbortController.abort(), what useChat().stop() does), in "
                   "headless Chromium",
}


class ServePathError(ValueError):
    """A --serve value that names no path."""


#: the servers' runtimes: a Python app hosting a Python adapter (harness/trial/serve/server.py), or the adapter
#: process of a JS framework as a Node HTTP handler (js/stopbench-tools/http_host.mjs)
RUNTIMES = ("python", "node")


@dataclass(frozen=True)
class ServePath:
    """A server and the client's stop. `app` is `module:attr` of a factory `(HostedRun) -> ASGI app` (Python);
    a Node path's app is the adapter process's own handler."""

    name: str
    app: str
    client_stop: str
    description: str = ""
    runtime: str = "python"

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ServePathError(f"serve path {self.name!r}: runtime {self.runtime!r} is none of {', '.join(RUNTIMES)}")
        if self.client_stop not in CLIENT_STOPS:
            raise ServePathError(f"serve path {self.name!r}: client_stop {self.client_stop!r} is none of "
                                 f"{', '.join(CLIENT_STOPS)}")

    @property
    def browser(self) -> bool:
        """Pressed by the page's Stop in a real browser."""
        return self.client_stop == "abort_fetch"


_STARLETTE = "harness.trial.serve.starlette_sse:app"

PATHS: dict[str, ServePath] = {p.name: p for p in (
    ServePath("starlette-sse", _STARLETTE, "disconnect",
              "Starlette endpoint streaming the run as server-sent events (sse-starlette, uvicorn); on the client's "
              "disconnect the generator is cancelled and the app presses the framework's stop"),
    ServePath("starlette-sse+cancel", _STARLETTE, "cancel_endpoint",
              "the same server; the page calls its cancel endpoint, which presses the framework's stop"),
    ServePath("starlette-sse+browser", _STARLETTE, "abort_fetch",
              "the same server; stopbench's chat page in headless Chromium, whose Stop aborts the fetch"),
    ServePath("node-http", "", "disconnect",
              "a Node HTTP handler (a JS adapter's process) streaming the run as server-sent events; the request's "
              "abort signal (`abortSignal: req.signal`) presses the framework's stop when the client goes away",
              runtime="node"),
    ServePath("node-http+cancel", "", "cancel_endpoint",
              "the same handler; the page calls its stop endpoint (as with useChat's `resume: true`)", runtime="node"),
    ServePath("node-http+browser", "", "abort_fetch",
              "the same handler; stopbench's chat page in headless Chromium, whose Stop aborts the fetch",
              runtime="node"),
)}


#: the serving stack's packages: a served row's `versions` name them beside the framework's
SERVING_PACKAGES = ("starlette", "sse-starlette", "uvicorn")


def serving_versions() -> dict[str, str]:
    """The installed versions of the serving stack (the framework's environment holds them: mcp needs them)."""
    from harness.contract.adapter import package_versions

    return package_versions(SERVING_PACKAGES)


def serve_path(name: str) -> ServePath | None:
    """The path named `name` (None for in-process); `module:attr` names a ServePath object elsewhere (a planted
    server in a test)."""
    if name == IN_PROCESS:
        return None
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ServePathError(f"--serve {name!r}: cannot load {attr} from {module}: {e}") from e
        if not isinstance(found, ServePath):
            raise ServePathError(f"--serve {name!r}: {attr} is not a ServePath")
        return found
    if name not in PATHS:
        raise ServePathError(f"--serve {name!r} is none of {', '.join([IN_PROCESS, *PATHS])} (or module:attr)")
    return PATHS[name]
