"""Serve the world in its own process, on 127.0.0.1 only, printing its base URL as the first line.

Its own process so that a framework that hogs the GIL cannot bend the world's clock or pacing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from pathlib import Path

import uvicorn

from harness.scenario import DEFAULT_SCENARIOS_DIR, load_scenarios
from harness.world.app import WorldApp

#: seconds an idle keep-alive connection stays open
KEEP_ALIVE_S = 75


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
    # timeout_keep_alive: longer than any step's deadline (resume: 30 s), so a framework's pooled connection
    # is never closed under it mid-trial (uvicorn's 5 s default equalled the stop/wait deadlines and raced
    # them); bounded, so idle connections of gone clients do not pile up (75 s, nginx's default)
    config = uvicorn.Config(app, log_level="warning", access_log=False, loop=loop, http=http,
                            timeout_graceful_shutdown=1, lifespan="on", timeout_keep_alive=KEEP_ALIVE_S)
    server = uvicorn.Server(config)
    logging.getLogger("uvicorn.error").addFilter(_quiet_about_resets)  # after Config: it configures logging
    print(url, flush=True)
    main = _serve(server, sock, _owner_pid())
    asyncio.run(main) if loop == "asyncio" else _run_uvloop(main)


def _quiet_about_resets(record: logging.LogRecord) -> bool:
    """A scripted reset ends its response unfinished on purpose (the server then closes the connection, which
    is the fault); it is in the ledger, not an error of the world's to log. The world never leaves a
    response unfinished otherwise."""
    return record.getMessage() != "ASGI callable returned without completing response."


def _owner_pid() -> int | None:
    """The process that started this world through WorldProcess (its own session: no terminal signal
    reaches it), if any."""
    from harness.owner import OWNER_ENV, parse

    owner = parse(os.environ.get(OWNER_ENV, ""))
    return owner.runner_pid if owner is not None and owner.kind == "world" else None


async def _serve(server: uvicorn.Server, sock: socket.socket, owner: int | None) -> None:
    watch = asyncio.create_task(_exit_with_owner(server, owner)) if owner else None
    try:
        await server.serve(sockets=[sock])
    finally:
        if watch:
            watch.cancel()


async def _exit_with_owner(server: uvicorn.Server, owner: int) -> None:
    """An owner killed outright (SIGKILL, a CI timeout) cannot end its world, nor its trials' processes
    (its subjects die with it, PR_SET_PDEATHSIG, but not their children): the world, the one process of
    the run left, ends what carries the dead runner's mark, then itself."""
    while os.getppid() == owner:
        await asyncio.sleep(0.2)
    left = _end_processes_of(owner)
    print(f"stopbench world: owner {owner} is gone; ended {left} process(es) of its trials; shutting down",
          file=sys.stderr, flush=True)
    server.should_exit = True


def _end_processes_of(runner: int) -> int:
    """SIGKILL every process marked as a trial's of `runner` (harness/owner.py); how many."""
    import signal

    from harness.owner import processes

    ended = 0
    for pid, who, _ in processes():
        if who.runner_pid == runner and who.kind in ("run", "subject"):
            try:
                os.kill(pid, signal.SIGKILL)
                ended += 1
            except (ProcessLookupError, PermissionError):
                pass
    return ended


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
