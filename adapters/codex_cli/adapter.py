"""Codex CLI (`@openai/codex`), run as its users script it: `codex exec --json "<prompt>"`, stopped by signals.

Its config.toml (in a throwaway CODEX_HOME under the trial's HOME) names the world as a custom model provider on the
Responses API and the world's MCP server as an MCP server of the session; every switch that makes it reach anything
but the world is off (framework.toml `[environment]`, and the keys of `config_toml`). Each key and flag here was
checked against the installed release: the command runs with `--strict-config`, which refuses a key it does not know.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from harness.contract.kit import API_KEY, NEXT_INPUT
from harness.contract.orchestrator import OrchestratorAdapter

FOLDER = Path(__file__).resolve().parent
PACKAGE = FOLDER / "node_modules" / "@openai" / "codex"
#: the Node that ships in the lockfile (the `node` package): 22, whose `process.execve` the wrapper execs into the
#: native binary with
PACKAGED_NODE = FOLDER / "node_modules" / ".bin" / "node"
#: the variable the custom provider reads its key from (`env_key`)
KEY_VARIABLE = "STOPBENCH_WORLD_API_KEY"
PROVIDER = "stopbench-world"
#: refuse a config key this release does not know (so none of ours is silently ignored); run in the trial's
#: project folder, which is no git checkout
FLAGS = ("--strict-config", "--skip-git-repo-check")
MCP_SERVER = "world"


def toml_value(value: object) -> str:
    """A TOML value for a string, a bool, a list of strings or a table of strings (JSON's escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def config_toml(model: str, base_url: str, mcp: dict) -> str:
    """$CODEX_HOME/config.toml: the world as the model provider and MCP server, nothing else reached."""
    tables: dict[str, dict[str, object]] = {
        "": {"model": model, "model_provider": PROVIDER, "approval_policy": "never",
             "sandbox_mode": "danger-full-access", "check_for_update_on_startup": False},
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        # the plugin sync (git ls-remote to github.com, api.github.com, chatgpt.com): not stopped by the switches above
        "features": {"plugins": False},
        f"model_providers.{PROVIDER}": {"name": "stopbench world", "base_url": base_url, "wire_api": "responses",
                                        "env_key": KEY_VARIABLE},
        f"mcp_servers.{MCP_SERVER}": {"command": mcp["command"], "args": mcp["args"], "env": mcp["env"]},
    }
    out = []
    for table, keys in tables.items():
        out += [f"[{table}]"] if table else []
        out += [f"{key} = {toml_value(value)}" for key, value in keys.items()] + [""]
    return "\n".join(out)


class CodexCli(OrchestratorAdapter):
    """`codex exec --json` under the Node that ships with the lockfile (22: the wrapper execs into the binary)."""

    native = "/bin/codex"
    #: its shell tool: a command runs on a pseudo-terminal of its own, and one still running after `yield_time_ms`
    #: stays as a session while the turn goes on
    agent_tools = ("exec_command",)
    #: the Node that runs the npm wrapper
    node: ClassVar[str] = str(PACKAGED_NODE)

    def command(self) -> list[str]:
        return [*self._codex(), "exec", "--json", *FLAGS, self.ctx.prompt]

    def resume_command(self) -> list[str]:
        return [*self._codex(), "exec", "resume", "--last", "--json", *FLAGS, NEXT_INPUT]

    def _codex(self) -> list[str]:
        """`codex` as its bin shim runs it, under this adapter's Node."""
        return [self.node, str(PACKAGE / "bin" / "codex.js")]

    def run_environment(self, home: Path) -> dict[str, str]:
        return {"CODEX_HOME": str(home / ".codex"), KEY_VARIABLE: API_KEY}

    def configure(self, home: Path) -> None:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(config_toml(self.ctx.model_name, self.ctx.model_base_url,
                                                            self.ctx.mcp.params()))

    @classmethod
    def versions(cls) -> dict[str, str]:
        manifest = PACKAGE / "package.json"  # absent until `npm ci` here (and in a wheel, which ships no packages)
        package = json.loads(manifest.read_text()) if manifest.is_file() else {}
        return {"@openai/codex": package.get("version", "not installed"), "node": _node_version(cls.node)}


class CodexCliNode20(CodexCli):
    """The same CLI under the machine's Node 20 (no `process.execve`): the wrapper spawns the binary and forwards
    SIGINT, SIGTERM and SIGHUP to it, so the user's process and the binary are two."""

    node = shutil.which("node") or "node"


def _node_version(node: str) -> str:
    try:
        return subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()[1:]
    except OSError:
        return "not installed"


ADAPTER = CodexCli
