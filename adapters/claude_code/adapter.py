"""Claude Code (`@anthropic-ai/claude-code`), run as its users script it: `claude -p "<prompt>" --output-format
stream-json --verbose`, stopped by signals.

The world is its model endpoint (`ANTHROPIC_BASE_URL`, the Messages route) and its MCP server (`--mcp-config`, a
file in the throwaway HOME); the switches that keep it from reaching anything else are framework.toml's
`[environment]`. Its tools are allowed as a headless script allows them (`--allowedTools`: its shell and the
world's server), since `-p` has nobody to ask. The npm command is the native binary itself: the package's
postinstall puts the platform binary (an optional dependency) in place of `bin/claude.exe`, so the process the user
starts is that binary, with no Node in between.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.contract.kit import API_KEY, NEXT_INPUT
from harness.contract.orchestrator import OrchestratorAdapter

FOLDER = Path(__file__).resolve().parent
PACKAGE = FOLDER / "node_modules" / "@anthropic-ai" / "claude-code"
#: what the `claude` bin runs: the platform's native binary, copied over the placeholder by the postinstall
CLAUDE = PACKAGE / "bin" / "claude.exe"
MCP_SERVER = "world"
#: the file `--mcp-config` reads, under the throwaway HOME
MCP_CONFIG = ".stopbench-mcp.json"
#: headless output as scripts read it: one JSON object a line, every message (`--verbose` is required with it)
OUTPUT = ("--output-format", "stream-json", "--verbose")


def mcp_config(mcp: dict) -> str:
    """The `--mcp-config` file: the world's MCP server as a stdio server named `world`."""
    return json.dumps({"mcpServers": {MCP_SERVER: {"type": "stdio", "command": mcp["command"], "args": mcp["args"],
                                                   "env": mcp["env"]}}}, indent=2)


class ClaudeCode(OrchestratorAdapter):
    """`claude -p` headless, the world as its Anthropic endpoint and MCP server."""

    native = "/claude.exe"
    #: its shell tool: `run_in_background` starts a task that runs on while the turn goes on
    agent_tools = ("Bash",)

    def command(self) -> list[str]:
        return [str(CLAUDE), "-p", self.ctx.prompt, *self._flags()]

    def resume_command(self) -> list[str]:
        return [str(CLAUDE), "-p", "--continue", NEXT_INPUT, *self._flags()]

    def _flags(self) -> list[str]:
        mcp = Path(os.environ["HOME"]) / MCP_CONFIG
        return [*OUTPUT, "--mcp-config", str(mcp), "--allowedTools", "Bash", f"mcp__{MCP_SERVER}"]

    def run_environment(self, home: Path) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.ctx.model_base_url, "ANTHROPIC_API_KEY": API_KEY}

    def configure(self, home: Path) -> None:
        (home / MCP_CONFIG).write_text(mcp_config(self.ctx.mcp.params()))

    @classmethod
    def versions(cls) -> dict[str, str]:
        manifest = PACKAGE / "package.json"  # absent until `npm ci` here (and in a wheel, which ships no packages)
        package = json.loads(manifest.read_text()) if manifest.is_file() else {}
        return {"@anthropic-ai/claude-code": package.get("version", "not installed")}


ADAPTER = ClaudeCode
