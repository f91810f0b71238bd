"""The Claude Agent SDK for Python (`claude-agent-sdk`): the app holds a `ClaudeSDKClient`, which runs the Claude
Code CLI as its subprocess, as the SDK's docs show: `async with ClaudeSDKClient(options) as client`, `query()`, then
`receive_response()` until the ResultMessage. The world is the CLI's Anthropic endpoint (`env`) and MCP server
(`mcp_servers`); its shell and the world's tools are allowed (`allowed_tools`), since nobody is asked. Each stop
button is one the SDK's docs name: `interrupt()`, leaving the client's context, cancelling the task. What the CLI
left running is the census's to count (`census`): the subprocess is the SDK's, not the app's.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, ClassVar

from harness.contract.kit import API_KEY, NEXT_INPUT, KitAdapter

MCP_SERVER = "world"


class ClaudeAgentSdk(KitAdapter):
    census: ClassVar[bool] = True
    agent_tools: ClassVar[tuple[str, ...]] = ("Bash",)

    @classmethod
    def prepare(cls) -> None:
        import claude_agent_sdk  # noqa: F401

    async def start(self) -> None:
        self.project.mkdir(parents=True, exist_ok=True)
        self.client: Any = None
        self.connected = asyncio.Event()
        self.job = asyncio.create_task(self._session(self.ctx.prompt, resume=False))

    @property
    def project(self) -> Path:
        """The folder the CLI works in (a user's checkout): `--continue` finds the session by it."""
        return self.ctx.workdir / "project"

    def _options(self, resume: bool) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        mcp = self.ctx.mcp.params()
        return ClaudeAgentOptions(
            cwd=str(self.project),
            env={"ANTHROPIC_BASE_URL": self.ctx.model_base_url, "ANTHROPIC_API_KEY": API_KEY,
                 "HOME": os.environ["HOME"]},
            mcp_servers={MCP_SERVER: {"type": "stdio", "command": mcp["command"], "args": mcp["args"],
                                      "env": mcp["env"]}},
            allowed_tools=["Bash", f"mcp__{MCP_SERVER}"],
            continue_conversation=resume,
        )

    async def _session(self, prompt: str, resume: bool) -> None:
        """One conversation as the docs' examples hold it; a ResultMessage that says it failed ends it in error."""
        from claude_agent_sdk import ClaudeSDKClient, ResultMessage

        async with ClaudeSDKClient(self._options(resume)) as client:
            self.client = client
            self.connected.set()
            await client.query(prompt)
            async for message in client.receive_response():
                if self.stop_pressed.is_set() and self.mode == "break":
                    break
                if isinstance(message, ResultMessage) and message.is_error and not self.stop_pressed.is_set():
                    raise RuntimeError(f"the CLI's result: {message.subtype}")

    async def stop_interrupt(self) -> None:
        """interrupt() on the connected client; returns once the job (reading on to the ResultMessage) has ended."""
        self.stop_pressed.set()
        await self.until(self.connected)
        if self.client is not None and not self.job.done():
            await self.client.interrupt()
        await self.until_done()

    stop_break = KitAdapter.flag_and_wait  # the loop leaves at its next message

    async def resume(self) -> None:
        self.stop_pressed.clear()
        self.connected.clear()
        self.client = None
        self.job = asyncio.create_task(self._session(NEXT_INPUT, resume=True))
        await self.job

    @classmethod
    def versions(cls) -> dict[str, str]:
        from importlib.util import find_spec

        spec = find_spec("claude_agent_sdk")  # the wheel bundles the CLI with its version beside it
        bundled = Path(spec.origin).parent / "_bundled" / "claude.version" if spec and spec.origin else None
        cli = bundled.read_text().split()[0] if bundled and bundled.is_file() else "not installed"
        return {**super().versions(), "claude-code (bundled)": cli}


ADAPTER = ClaudeAgentSdk
