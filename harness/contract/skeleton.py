"""`stopbench new-adapter NAME`: the files of a new adapter, ready to pass the contract tests.

The skeleton runs a minimal agent loop straight on the model API so it works from the first minute;
every TODO marks where the framework's own calls replace it.
"""

from __future__ import annotations

import re
from pathlib import Path

ADAPTER_PY = '''"""{title} adapter for stopbench.

TODO: build the agent the way {title}'s documentation shows, and press its own stop buttons.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from harness.contract.adapter import Adapter, TrialContext
from harness.tools.catalogue import openai_tool_definitions


class {cls}(Adapter):
    name = "{name}"
    # TODO: one entry per stop button the framework offers: id -> the primitive it presses, one line
    stop_modes = {{"cancel": "cancel the asyncio task that runs the agent"}}
    # TODO: how the framework continues a stopped run; leave empty if it cannot (resume() then raises NoResume)
    resume_primitive = ""
    # TODO: add "sync" and "mcp" once the framework's tools and MCP client are wired in
    tool_styles = ("async",)
    # TODO: switch off the framework's telemetry / tracing / version checks here
    environment: dict[str, str] = {{}}
    # TODO: the distributions whose versions every row records, e.g. ("{name}",)
    packages = ("httpx",)

    @classmethod
    def prepare(cls) -> None:
        """TODO: import the framework here, so forked trials start warm."""

    async def start(self, ctx: TrialContext) -> None:
        self.ctx = ctx
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        # TODO: replace this minimal loop with the framework's agent, tools wrapped from ctx.tools.
        messages = [{{"role": "system", "content": self.ctx.system_prompt}},
                    {{"role": "user", "content": self.ctx.prompt}}]
        async with httpx.AsyncClient(timeout=30) as client:
            while True:
                r = await client.post(f"{{self.ctx.model_base_url}}/chat/completions", json={{
                    "model": self.ctx.model_name, "messages": messages, "tools": openai_tool_definitions()}})
                message = r.json()["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return
                for call in message["tool_calls"]:
                    fn = call["function"]
                    result = await self.ctx.tools.async_[fn["name"]](**json.loads(fn["arguments"]))
                    messages.append({{"role": "tool", "tool_call_id": call["id"], "content": result}})

    async def stop(self, mode: str) -> None:
        # TODO: one branch per stop mode, each pressing the framework's own button
        self.task.cancel()

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        # TODO: close the framework's clients and MCP servers
        pass


ADAPTER = {cls}
'''

README_MD = """# {title} adapter

TODO: what {title} is and which versions were measured (see constraints.txt).

## Stop modes

| mode | primitive | follows |
| --- | --- | --- |
| cancel | TODO | TODO: the docs page or source file |

## Resume

TODO: the framework's resume path, or why there is none.

## Tool styles

TODO: how sync and async tools are wrapped, and how the MCP server (`ctx.mcp_command`) is attached.

## What we found

TODO: numbers from `stopbench run --adapter {name}`, and what a user should know.
"""


def write_skeleton(name: str, adapters_dir: Path) -> list[Path]:
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise ValueError(f"adapter name {name!r}: use lower-case letters, digits and dashes")
    folder = adapters_dir / name.replace("-", "_")
    if folder.exists():
        raise FileExistsError(f"{folder} already exists")
    folder.mkdir(parents=True)
    title = name.replace("-", " ").title()
    cls = "".join(part.title() for part in re.split(r"[-_]", name)) + "Adapter"
    files = {
        folder / "__init__.py": "",
        folder / "adapter.py": ADAPTER_PY.format(name=name, title=title, cls=cls),
        folder / "README.md": README_MD.format(name=name, title=title),
        folder / "constraints.txt": f"# TODO: pin {name} and everything it pulls in (uv pip compile)\n",
    }
    for path, text in files.items():
        path.write_text(text)
    return list(files)
