"""Known answers for the orchestrator adapter kind: the planted CLI (tests/known_answer/planted_cli.py), stopped by
each of an orchestrator's signals. Its processes, by construction: the wrapper, the native agent, the world's MCP
server and `sleep 15` in the CLI's process group; `sh` and its `sleep 600` in a session of their own.

| stop           | what happens                                               | at 5 s | at 30 s | after the stop    |
|----------------|------------------------------------------------------------|--------|---------|-------------------|
| sigint         | forwarded to the native: it closes its MCP server, 130     | 3      | 2       | nothing           |
| sigint_group   | the group's all get it: `sleep 15` dies too                | 2      | 2       | nothing           |
| sighup         | the group dies (the default action); the server at EOF     | 2      | 2       | nothing           |
| sigkill        | the wrapper only: the native, orphaned, works on           | 5      | 4       | 1 request, 1 email|
| sigkill_native | the native dies, its server at EOF, the wrapper after it   | 3      | 2       | nothing           |
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.contract.orchestrator import STOPS, OrchestratorAdapter

PLANTED = Path(__file__).with_name("planted_cli.py")


class PlantedCli(OrchestratorAdapter):
    name = "known-planted-cli"
    stop_modes = {mode: f"{press.signal.name} to the {press.target}" for mode, press in STOPS.items()}

    def command(self) -> list[str]:
        ctx = self.ctx
        return [sys.executable, str(PLANTED), "wrapper", "--model", ctx.model_base_url,
                "--services", ctx.services_base_url, "--mcp", json.dumps(ctx.mcp.params())]

    def is_native(self, argv: list[str]) -> bool:
        return argv[2:3] == ["native"]  # both run planted_cli.py: the role after it tells them apart
