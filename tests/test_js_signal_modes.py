"""The Node kit's serve(): one press, one mode. Two stop modes on one signal: the trial's own (the start request's
`mode`) is pressed when the signal comes, and the other never is. And the kit serves only an adapter that
implements exactly the modes it is handed (its framework.toml's), refusing any other at start, naming the file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from harness.contract.protocol import ProtocolAdapter, declaration_env

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
PROTOCOL = Path(__file__).resolve().parent.parent / "js" / "stopbench-tools" / "protocol.mjs"
ADAPTER = """
import { serve } from %s;
const pressed = [];
serve({
  stops: {
    drain_term() { pressed.push("drain_term"); },
    abort_term() { pressed.push("abort_term"); },
  },
  async start() { this.job = new Promise(() => {}); },
  async close() {},
  versions() { return { pressed: pressed.join(",") }; },
});
"""


class TwoOnSigterm(ProtocolAdapter):
    name = "two-on-sigterm"
    stop_modes = {"drain_term": "drain on SIGTERM", "abort_term": "abort on SIGTERM"}
    stop_signals = {"drain_term": "SIGTERM", "abort_term": "SIGTERM"}
    tool_styles = ("async",)


def _read(proc: subprocess.Popen) -> dict:
    return json.loads(proc.stdout.readline())


def _script(tmp_path: Path, text: str) -> Path:
    script = tmp_path / "adapter.mjs"
    script.write_text(text % json.dumps(PROTOCOL.as_uri()))
    return script


def test_a_signal_presses_the_trials_mode_only(tmp_path):
    script = _script(tmp_path, ADAPTER)
    proc = subprocess.Popen(["node", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **declaration_env(TwoOnSigterm)})
    try:
        caps = _read(proc)
        assert caps["method"] == "capabilities"
        assert caps["params"]["stop_modes"] == {"drain_term": {"primitive": "drain on SIGTERM", "signal": "SIGTERM"},
                                                "abort_term": {"primitive": "abort on SIGTERM", "signal": "SIGTERM"}}
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


class OneMode(ProtocolAdapter):
    name = "one-mode"
    stop_modes = {"drain_term": "drain"}
    tool_styles = ("async",)


class ThreeModes(ProtocolAdapter):
    name = "three-modes"
    stop_modes = {"drain_term": "drain", "abort_term": "abort", "pause": "pause"}
    tool_styles = ("async",)


@pytest.mark.parametrize(("declared", "adapter", "refusal"), [
    (ThreeModes, ADAPTER, "stop mode(s) pause declared in tests.test_js_signal_modes.ThreeModes have no function "
                          "in stops"),
    (OneMode, ADAPTER, "stops abort_term: no such stop mode declared in tests.test_js_signal_modes.OneMode"),
    (TwoOnSigterm, ADAPTER.replace("serve({", "serve({ capabilities: { name: 'x' },"),
     "capabilities: declared in tests.test_js_signal_modes.TwoOnSigterm; the adapter states only its stops"),
    (None, ADAPTER, "STOPBENCH_DECLARATION is not set"),
])
def test_the_kit_refuses_at_start_an_adapter_whose_stops_are_not_its_declared_modes(tmp_path, declared, adapter,
                                                                                   refusal):
    script = _script(tmp_path, adapter)
    env = {k: v for k, v in os.environ.items() if k != "STOPBENCH_DECLARATION"}
    done = subprocess.run(["node", str(script)], input="", capture_output=True, text=True, timeout=30,
                          env={**env, **(declaration_env(declared) if declared else {})})
    assert (done.returncode, done.stdout) == (2, "")  # no capabilities: the harness's probe fails, quoting stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{script}: {refusal}"), line
