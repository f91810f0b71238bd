"""The standard-library MCP server answers as the `mcp` SDK's own server does (tests/mcp_sdk_server.py,
the oracle), handles requests concurrently, honours cancellation and ends with its stdin."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = "harness.tools.mcp_server"
ORACLE = "tests.mcp_sdk_server"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
EMAIL = {"to": "m@example.com", "subject": "S", "body": "B"}


class Server:
    def __init__(self, module: str, run_url: str):
        # SIGINT as a terminal gives it: a runner started in the background (nohup, `&`) passes it on ignored
        self.proc = subprocess.Popen([sys.executable, "-m", module, "--run-url", run_url], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def ask(self, msg: dict) -> dict:
        self.send(msg)
        return self.receive()

    def close(self) -> int:
        self.proc.stdin.close()
        code = self.proc.wait(10)
        self.proc.stdout.close()
        return code


def _run(world_client, latency_ms: int = 5) -> str:
    run = world_client.create_run({"name": "mcp", "turns": [{"text_tokens": 1}], "offsets": [],
                                   "latency_ms": {"email": latency_ms, "calendar": latency_ms, "docs": 1}})
    return run["services_base_url"]


def _transcript(module: str, run_url: str) -> list[dict]:
    server = Server(module, run_url)
    calls = [("tools/list", {}),
             ("tools/call", {"name": "draft_document", "arguments": {"title": "a", "topic": "b"}}),
             ("tools/call", {"name": "send_email", "arguments": EMAIL}),
             ("tools/call", {"name": "nope", "arguments": {}}),
             ("ping", None), ("resources/list", {}), ("prompts/list", {}), ("resources/templates/list", {})]
    out = [server.ask(INIT)]
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i, (method, params) in enumerate(calls, 2):
        out.append(server.ask({"jsonrpc": "2.0", "id": i, "method": method,
                               **({"params": params} if params is not None else {})}))
    assert server.close() == 0
    return out


def _comparable(message: dict) -> dict:
    """Effect ids and times differ run to run; the shape and every other value must not."""
    text = json.dumps(message)
    for key in ("effect_id", "committed_ns", "received_ns"):
        text = __import__("re").sub(rf'\\"{key}\\": (\\"[^\\\\]*\\"|\d+)', f'\\"{key}\\": X', text)
    return json.loads(text)


def test_answers_as_the_sdk_server_does(world_client):
    ours = _transcript(OURS, _run(world_client))
    oracle = _transcript(ORACLE, _run(world_client))
    ours[0]["result"]["serverInfo"].pop("version")  # the SDK names its own version there
    oracle[0]["result"]["serverInfo"].pop("version")
    oracle[0]["result"]["capabilities"].pop("experimental", None)  # mcp 1.x says it has none
    assert [_comparable(m) for m in ours] == [_comparable(m) for m in oracle]


def test_calls_run_concurrently_and_a_cancelled_call_gets_no_answer(world_client):
    run_url = _run(world_client, latency_ms=300)
    server = Server(OURS, run_url)
    server.ask(INIT)
    started = time.monotonic()
    for i in (2, 3):
        meeting = {"title": f"m{i}", "when": "2026-01-01T10:00:00Z"}
        server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                     "params": {"name": "book_meeting", "arguments": meeting}})
    server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                 "params": {"name": "send_email", "arguments": EMAIL}})
    time.sleep(0.1)
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}})
    answers = {server.receive()["id"] for _ in range(2)}
    assert answers == {2, 3} and time.monotonic() - started < 0.55  # side by side, not 2 x 300 ms
    assert server.ask({"jsonrpc": "2.0", "id": 5, "method": "ping"}) == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert server.close() == 0
    events = world_client.ledger(run_url.split("/runs/")[1])["events"]
    assert [e["event"] for e in events if e["event"] == "process_registered"] == ["process_registered"]
    assert sum(e["event"] == "effect_received" and e["kind"] == "email" for e in events) == 1


@pytest.mark.parametrize("module", [OURS, ORACLE])
def test_end_of_stdin_ends_the_server_with_a_call_in_flight(world_client, module):
    server = Server(module, _run(world_client, latency_ms=5000))
    server.ask(INIT)
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "send_email", "arguments": EMAIL}})
    time.sleep(0.3)
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 2.5  # not the call's 5 s


def test_sigint_ends_the_server_while_its_stdin_is_open(world_client):
    """#13 item 10: the SDK's server ignored SIGINT while stdin stayed open."""
    import signal

    server = Server(OURS, _run(world_client))
    server.ask(INIT)
    started = time.monotonic()
    server.proc.send_signal(signal.SIGINT)
    code = server.proc.wait(10)
    assert time.monotonic() - started < 3 and code != 0  # ended by the signal, not by end of stdin
    server.proc.stdin.close()
    server.proc.stdout.close()
