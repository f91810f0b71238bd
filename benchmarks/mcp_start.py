"""CPU of one MCP server session: start, initialize, list the tools, one tool call, end of stdin, exit.

`python benchmarks/mcp_start.py [--sessions N]` measures stopbench's server (harness.tools.mcp_server) and,
side by side, the same tools on the `mcp` SDK's own server (tests/mcp_sdk_server.py, what it replaced),
each a real process started as a framework's MCP client starts it. CPU is the kernel's count for the
process (user + system). Goal (issue #17): 150 ms or less. Results also go to benchmarks/results/mcp.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness.trial.world_client import WorldClient, WorldProcess

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "results" / "mcp.json"
SERVERS = {"stopbench": "harness.tools.mcp_server", "mcp SDK": "tests.mcp_sdk_server"}
MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
     "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "draft_document", "arguments": {"title": "t", "topic": "q3"}}},
]


def session(module: str, run_url: str) -> tuple[float, float]:
    """(CPU s, wall s) of one server process, start to exit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", module, "--run-url", run_url], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for msg in MESSAGES:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        if "id" in msg:
            answer = json.loads(proc.stdout.readline())
            assert "result" in answer, answer
    proc.stdin.close()
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    proc.stdout.close()
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    result: dict[str, float | int | bool] = {"sessions": args.sessions}
    with WorldProcess() as world:
        client = WorldClient(world.url)
        for label, module in SERVERS.items():
            cpu, wall = [], []
            for _ in range(args.sessions):
                run = client.create_run("q3_report")
                c, w = session(module, run["services_base_url"])
                cpu.append(c * 1000)
                wall.append(w * 1000)
            result[f"{label} cpu_ms_p50"] = statistics.median(cpu)
            result[f"{label} wall_ms_p50"] = statistics.median(wall)
        client.close()
    result["goal_cpu_ms"] = 150
    result["met"] = result["stopbench cpu_ms_p50"] <= 150
    from figures import publish  # benchmarks/ is the script's folder

    publish(result, OUT, digits=1)


if __name__ == "__main__":
    main()
