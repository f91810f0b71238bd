"""A JS adapter's packages are installed by npm on the Node the adapter runs on (harness/npm_install.py), so npm
checks their `engines` against that Node and warns of nothing (EBADENGINE) for a Node they never run on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.frameworks import discover
from harness.npm_install import install_commands, npm_cli, runtime_node

ROOT = Path(__file__).resolve().parents[1]
OWN_NODE = "node_modules/.bin/node"  # an adapter that runs the Node its `node` package ships


def test_an_adapter_that_runs_its_own_node_is_installed_by_it(tmp_path):
    protocols = [f.protocol for f in discover(ROOT) if f.protocol is not None and f.protocol.npm]
    own = sorted(p.folder.name for p in protocols if p.command[0] == OWN_NODE)
    assert own == ["mastra", "openai_agents_js", "vercel_ai"]
    for protocol in protocols:
        pinned = runtime_node(protocol.folder)
        assert (pinned is not None) == (protocol.command[0] == OWN_NODE), protocol.folder.name
    if shutil.which("npm") is None:
        pytest.skip("needs npm on PATH")
    vercel = ROOT / "adapters" / "vercel_ai"
    node = tmp_path / "node-22.23.3"
    assert runtime_node(vercel) == "22.23.3"
    assert install_commands(vercel, tmp_path) == [
        ["npm", "install", "--prefix", str(node), "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
         "node@22.23.3"],
        [str(node / "node_modules" / ".bin" / "node"), npm_cli(), "ci", "--prefix", str(vercel)]]
    (node / "node_modules" / ".bin").mkdir(parents=True)
    (node / "node_modules" / ".bin" / "node").touch()  # installed once: not again
    assert [c[0] for c in install_commands(vercel, tmp_path)] == [str(node / "node_modules" / ".bin" / "node")]
    reference = ROOT / "adapters" / "reference_js"
    assert install_commands(reference, tmp_path) == [["npm", "ci", "--prefix", str(reference)]]
