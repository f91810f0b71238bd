"""The oracle: the same tools served by the `mcp` SDK's own server (what harness.tools.mcp_server replaced).

`python -m tests.mcp_sdk_server --run-url ...`. tests/test_mcp_server.py holds the standard-library server
to this one's answers. Works with mcp 1.x (FastMCP) and 2.x (MCPServer).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import httpx

from harness.tools import mitigation as mitigations
from harness.tools.toolbox import Toolbox


def _server_class():
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x

        return MCPServer
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # mcp 1.x

        return FastMCP


def build_server(run_url: str, mitigation: str = "none", workdir: str | None = None, run_id: str = ""):
    server = _server_class()("stopbench-world", log_level="WARNING")
    policy = mitigations.Mitigation(mitigation)
    folder = Path(workdir or ".")
    log = policy.saga_log(folder)
    toolbox = Toolbox(run_url, key_policy=policy.key_policy(run_id, folder), on_attempt=log.attempt if log else None)
    for name, fn in toolbox.async_.items():
        server.tool(name=name, description=fn.__doc__)(fn)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.mcp_sdk_server")
    parser.add_argument("--run-url", required=True, help="the run's services base URL")
    parser.add_argument("--mitigation", default="none", choices=mitigations.MITIGATIONS)
    parser.add_argument("--workdir", help="the trial folder (saga log and key generations live there)")
    parser.add_argument("--run-id", default="")
    args = parser.parse_args(argv)
    run_url = args.run_url.rstrip("/")
    httpx.post(f"{run_url}/processes", json={"pid": os.getpid(), "role": "mcp_server"},
               timeout=10, verify=False).raise_for_status()
    build_server(run_url, args.mitigation, args.workdir, args.run_id).run("stdio")


if __name__ == "__main__":
    main()
