"""Serve the world in its own process, on 127.0.0.1 only, printing its base URL as the first line.

Its own process so that a framework that hogs the GIL cannot bend the world's clock or pacing.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import uvicorn

from harness.scenario import DEFAULT_SCENARIOS_DIR, load_scenarios
from harness.world.app import WorldApp


def serve(port: int = 0, scenarios_dir: Path = DEFAULT_SCENARIOS_DIR) -> None:
    load_scenarios(scenarios_dir)  # fail fast, naming the file, before anyone connects
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = WorldApp(scenarios_dir, url)
    loop = "uvloop" if _has("uvloop") else "asyncio"
    http = "httptools" if _has("httptools") else "h11"
    # timeout_keep_alive: uvicorn's default (5 s) equals the stop/wait deadlines, so the subject's own mark
    # after a 5 s hang raced the world closing its idle connection (httpx.ReadError, a crashed subject)
    config = uvicorn.Config(app, log_level="warning", access_log=False, loop=loop, http=http,
                            timeout_graceful_shutdown=1, lifespan="on", timeout_keep_alive=600)
    server = uvicorn.Server(config)
    print(url, flush=True)
    main = _serve(server, sock, _owner_pid())
    asyncio.run(main) if loop == "asyncio" else _run_uvloop(main)


def _owner_pid() -> int | None:
    """The process that started this world through WorldProcess (its own session: no terminal signal
    reaches it), if any."""
    from harness.vocabulary import OWNER_ENV

    owner = os.environ.get(OWNER_ENV, "")
    return int(owner.removeprefix("world:")) if owner.startswith("world:") else None


async def _serve(server: uvicorn.Server, sock: socket.socket, owner: int | None) -> None:
    watch = asyncio.create_task(_exit_with_owner(server, owner)) if owner else None
    try:
        await server.serve(sockets=[sock])
    finally:
        if watch:
            watch.cancel()


async def _exit_with_owner(server: uvicorn.Server, owner: int) -> None:
    """An owner killed outright (SIGKILL, a CI timeout) cannot end its world: the world ends itself."""
    while os.getppid() == owner:
        await asyncio.sleep(0.5)
    print(f"stopbench world: owner {owner} is gone; shutting down", file=sys.stderr, flush=True)
    server.should_exit = True


def _run_uvloop(main) -> None:
    import uvloop

    uvloop.run(main)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.world`: serve until SIGTERM or Ctrl-C."""
    import argparse
    import contextlib
    import signal

    parser = argparse.ArgumentParser(prog="python -m harness.world")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scenarios", default=str(DEFAULT_SCENARIOS_DIR))
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: give 0 (any free port) to 65535")
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        serve(args.port, Path(args.scenarios))
    return 0
