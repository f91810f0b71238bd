"""The package installs and works outside the repository (issue #16): a wheel built from the checkout, in a fresh
virtualenv, runs `stopbench list`, one reference trial (MCP tools) and the pytest plugin's example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UV = shutil.which("uv")


def _run(*cmd: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


#: under pytest-xdist (`--dist loadgroup`): its tests share one built wheel: one worker builds it once
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if UV is None:
        pytest.fail("uv is needed to build and install the wheel (pip install uv)")
    out = tmp_path_factory.mktemp("wheel")
    _run(UV, "build", "--wheel", "--out-dir", str(out), str(REPO), cwd=out)
    (found,) = out.glob("stopbench-*.whl")
    return found


def _fresh_venv(tmp_path: Path, wheel: Path, *packages: str, extras: str = "") -> tuple[str, str]:
    """A new virtualenv with the wheel (with `extras`) and `packages` at the reference's pins: its python and
    stopbench."""
    venv = tmp_path / "venv"
    _run(UV, "venv", "-q", "-p", sys.executable, str(venv), cwd=tmp_path)
    python = str(venv / "bin" / "python")
    _run(UV, "pip", "install", "-q", "--python", python, f"{wheel}[{extras}]" if extras else str(wheel), *packages,
         "-c", str(REPO / "adapters" / "reference" / "constraints.txt"), cwd=tmp_path)
    return python, str(venv / "bin" / "stopbench")


def test_the_wheel_claims_one_import_name_and_carries_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"stopbench", wheel.name.split("-py3")[0] + ".dist-info"}
    for needed in ("stopbench/scenarios/q3_report.yaml", "stopbench/data/claims.yaml", "stopbench/py.typed",
                   "stopbench/harness/results/templates/index.html.j2", "stopbench/adapters/reference/adapter.py",
                   "stopbench/adapters/autogen/framework.toml"):
        assert needed in names, needed
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "License :: OSI Approved :: MIT License" in text
    assert any(n.endswith("licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "stopbench = stopbench.cli:main" in entry and "stopbench = stopbench.pytest_plugin" in entry
    source = zipfile.ZipFile(wheel).read("stopbench/harness/trial/subject.py").decode()
    assert "from stopbench.harness.contract.adapter import" in source and "from harness." not in source


def test_a_fresh_virtualenv_runs_list_a_trial_and_the_plugin_example(wheel, tmp_path):
    python, stopbench = _fresh_venv(tmp_path, wheel, "openai", "pytest")
    assert _run(stopbench, "--version", cwd=tmp_path).stdout.strip() == "stopbench 0.1.0"
    listed = _run(stopbench, "list", cwd=tmp_path).stdout
    assert "reference" in listed and "q3_report" in listed
    for generic in ("harness", "adapters"):  # not claimed: only `stopbench` is installed
        probe = subprocess.run([python, "-c", f"import {generic}"], cwd=tmp_path, capture_output=True)
        assert probe.returncode != 0
    _run(stopbench, "run", "--adapter", "reference", "--scenario", "q3_report", "--offset",
         "on:effect_received:email", "--tools", "mcp", "--out", str(tmp_path / "out"), cwd=tmp_path)
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "raw" / "reference.jsonl").read_text().splitlines()]
    assert (row["status"], row["effects_leaked"], row["orphans"]) == ("ok", 0, 0)
    shutil.copytree(REPO / "examples" / "openai_agent", tmp_path / "example" / "openai_agent")
    done = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "openai_agent", cwd=tmp_path / "example")
    assert "6 passed, 1 xfailed" in done.stdout


def test_a_newcomer_adds_an_adapter_with_the_wheel_installed_inside_a_checkout(wheel, tmp_path):
    """In a checkout, its `stopbench/` folder sits where `python -m stopbench...` looks first: the installed
    package's world, subjects and MCP servers start with -P, so the folder cannot stand in for it; new-adapter
    does not write into site-packages, and says what to do instead."""
    python, stopbench = _fresh_venv(tmp_path, wheel, extras="test")  # README: the contract tests need the extra
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "stopbench", checkout / "stopbench", ignore=shutil.ignore_patterns("__pycache__"))
    refused = subprocess.run([stopbench, "new-adapter", "acme-agents"], cwd=checkout, capture_output=True, text=True)
    site = Path(subprocess.run([python, "-c", "import stopbench, os; print(os.path.dirname(stopbench.__file__))"],
                               cwd=tmp_path, capture_output=True, text=True).stdout.strip())
    assert refused.returncode == 2 and not (site / "adapters" / "acme_agents").exists(), refused.stdout
    assert refused.stderr == (
        f"stopbench new-adapter: error: stopbench is installed as a package ({site}), and a new adapter does not "
        "belong in it: the next install would remove it. To add a framework to stopbench, install your checkout "
        "editable (`pip install -e .` in it), then `stopbench new-adapter acme-agents` writes adapters/acme_agents/ "
        "there. For an adapter of your own: `stopbench new-adapter acme-agents --dir DIR`, then "
        "`PYTHONPATH=DIR stopbench test-adapter acme_agents.adapter:ADAPTER`.\n")
    mine = tmp_path / "mine"
    written = _run(stopbench, "new-adapter", "acme-agents", "--dir", str(mine), cwd=checkout).stdout
    assert written.splitlines()[-1] == (f"next: PYTHONPATH={mine} stopbench test-adapter acme_agents.adapter:ADAPTER"
                                        "   (then fill in the TODOs)")
    tested = subprocess.run([stopbench, "test-adapter", "acme_agents.adapter:ADAPTER", "--", "-p", "no:cacheprovider"],
                            cwd=checkout, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(mine)})
    assert tested.returncode == 0 and "4 passed" in tested.stdout, tested.stdout[-3000:] + tested.stderr[-2000:]
