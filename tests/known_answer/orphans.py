"""Known answers for orphans as they happen in the wild (issue #14): a host that ends only its direct child.

`EndsDirectChildOnly` starts the trial's MCP server command itself (harness/tools/mcp_launch.py decides what
that command becomes) with a stdin pipe it keeps open, as a client that never speaks to it; its close()
sends SIGTERM to the direct child alone and returns, as MCP clients that end only the process they
started do. So the survivors of each launch variant are known by construction:

| launch   | after close()                                      | after a host crash (SIGKILL, no close)  |
|----------|----------------------------------------------------|-----------------------------------------|
| direct   | 0: SIGTERM ends the server                         | 0: its stdin closes with the host: EOF  |
| launcher | 2: the launcher dies alone; its shell and server   | 0: EOF reaches the server, then the     |
|          |    run on (stdin is still open)                    |    shell and the launcher end           |
| deaf     | 0: SIGTERM ends it                                 | 1: it ignores EOF, nobody signals it    |
| stubborn | 1: it ignores SIGTERM                              | 1                                       |
"""

from __future__ import annotations

import subprocess

from tests.known_answer.adapters import _Base

#: the host keeps its client objects for its lifetime (a long-lived app): the stdin pipes stay open until the
#: host dies, not until the garbage collector happens to close them
KEPT: list[subprocess.Popen] = []


class EndsDirectChildOnly(_Base):
    name = "known-ends-direct-child-only"
    tool_styles = ("mcp",)

    async def start(self) -> None:
        server = self.ctx.mcp
        self.server = subprocess.Popen([server.command, *server.args], env=server.env, stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL)
        KEPT.append(self.server)
        await super().start()

    async def close(self) -> None:
        self.server.terminate()  # the direct child only, and on: a stubborn server would make wait() hang
