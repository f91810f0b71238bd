"""The Node kit's serve(): one press, one mode. Two stop modes on one signal: the trial's own (the start request's
`mode`) is pressed when the signal comes, and the other never is."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
PROTOCOL = Path(__file__).resolve().parent.parent / "js" / "stopbench-tools" / "protocol.mjs"
ADAPTER = """
import { serve } from %s;
const pressed = [];
serve({
  capabilities: { name: "two-on-sigterm", stop_modes: {
    drain_term: { primitive: "drain on SIGTERM", signal: "SIGTERM" },
    abort_term: { primitive: "abort on SIGTERM", signal: "SIGTERM" } },
    resume: null, tool_styles: ["async"] },
  async start() { this.job = new Promise(() => {}); },
  async stop(mode) { pressed.push(mode); },
  async close() {},
  versions() { return { pressed: pressed.join(",") }; },
});
"""


def _read(proc: subprocess.Popen) -> dict:
    return json.loads(proc.stdout.readline())


def test_a_signal_presses_the_trials_mode_only(tmp_path):
    script = tmp_path / "adapter.mjs"
    script.write_text(ADAPTER % json.dumps(PROTOCOL.as_uri()))
    proc = subprocess.Popen(["node", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert _read(proc)["method"] == "capabilities"
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "start", "params": {"mode": "abort_term"}})
                         + "\n")
        proc.stdin.flush()
        assert _read(proc)["id"] == 1
        proc.send_signal(signal.SIGTERM)
        handled = _read(proc)
        assert handled["method"] == "stop_handled" and int(handled["params"]["t"]) > 0  # then it presses the mode
        assert _read(proc) == {"jsonrpc": "2.0", "method": "stopped", "params": {"signal": "SIGTERM"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "versions"}) + "\n")
        proc.stdin.flush()
        assert _read(proc) == {"jsonrpc": "2.0", "id": 2, "result": {"packages": {"pressed": "abort_term"}}}
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    assert proc.returncode == 0
