"""How the world's MCP server is launched: the process trees orphans come from in the wild.

The framework's MCP client starts `command args` (harness/contract/adapter.py `McpServer`) as it would any
server; what that command turns into is the launch variant (a trial dimension: `--mcp-launch`):

- `direct`: the server itself (python -m ...mcp_server). It exits when its stdin closes and on SIGTERM.
- `launcher`: a launcher that does not forward signals, as `npx` -> `npm exec` -> `sh -c` -> `node` does
  (airis-mcp-gateway #232: terminate() reached only `npm exec`): launcher -> shell -> server, stdin and
  stdout passed down. A SIGTERM ends the launcher alone; the server still ends when its stdin closes.
- `deaf`: a server that never notices its stdin closed (python-sdk #2231: EOF not propagated from the
  reader thread; email-mcp #60: a timer keeps it alive). SIGTERM ends it.
- `stubborn`: deaf, and ignores SIGTERM (mcp-framework #181): only SIGKILL ends it.

Every process of a tree registers with the world (`POST /runs/<id>/processes`, its role), so which of
them outlived the trial is known for certain, not guessed from a process list.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from harness import python_module

#: the variants, in the report's order; `direct` is the default and keeps trial ids as they were
LAUNCHES = ("direct", "launcher", "deaf", "stubborn")
DEFAULT_LAUNCH = "direct"
#: a shell that stays the server's parent (`sh -c 'cmd'` may exec cmd in place; a compound command may not)
SHELL = "/bin/sh"


class LaunchError(ValueError):
    """An unknown launch variant."""


def check(launch: str) -> str:
    if launch not in LAUNCHES:
        raise LaunchError(f"--mcp-launch {launch!r}: give one of {', '.join(LAUNCHES)}")
    return launch


def tool_label(tool_style: str, launch: str) -> str:
    """A row's `tool_style` and `mcp_launch` as trial ids and tables write them (the one place they are joined,
    never split): `mcp` for a direct launch, `mcp+<launch>` otherwise."""
    return tool_style if launch == DEFAULT_LAUNCH or tool_style != "mcp" else f"{tool_style}+{launch}"


def server_command(launch: str, server_args: list[str]) -> tuple[str, list[str]]:
    """(command, args) to hand the framework's MCP client: the server's own arguments after the module."""
    server = [*python_module("tools.mcp_server"), *server_args]
    if launch == "direct":
        return server[0], server[1:]
    if launch in ("deaf", "stubborn"):
        stubborn = ["--on-sigterm", "ignore"] if launch == "stubborn" else []
        return server[0], [*server[1:], "--on-eof", "stay", *stubborn]
    if launch == "launcher":
        launcher = python_module("tools.mcp_launch")
        return launcher[0], [*launcher[1:], *server_args]
    raise LaunchError(f"--mcp-launch {launch!r}: give one of {', '.join(LAUNCHES)}")


def _run_url(server_args: list[str]) -> str:
    return server_args[server_args.index("--run-url") + 1].rstrip("/")


def launcher_main(server_args: list[str]) -> int:
    """The launcher: start `sh -c '<server>; exit $?'` with this process's stdin and stdout, register both
    with the world, wait for the shell and exit with its status. No signal handler: a SIGTERM ends this
    process alone (its default action), as it ends `npm exec`; the shell and the server run on."""
    import asyncio

    from harness.tools.loopback_http import post_json

    run_url = _run_url(server_args)
    server = [*python_module("tools.mcp_server"), *server_args]
    shell = subprocess.Popen([SHELL, "-c", '"$@"; exit $?', "sh", *server])  # stdin/stdout inherited
    for pid, role in ((os.getpid(), "mcp_launcher"), (shell.pid, "mcp_shell")):
        asyncio.run(post_json(f"{run_url}/processes", {"pid": pid, "role": role}, timeout_s=10))
    return shell.wait()


def main(argv: list[str] | None = None) -> None:
    """`python -m ...mcp_launch <the server's arguments>`: the `launcher` variant, launcher -> sh -> server."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(launcher_main(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
