"""A framework folder describes itself: adding one shows up in nox, the test suites and the CI matrix
with no other file touched."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import frameworks

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what nox and CI read (noxfile, harness/frameworks.py, the framework folders) plus one
    throwaway framework folder."""
    (tmp_path / "harness").mkdir()
    for rel in ("noxfile.py", "harness/__init__.py", "harness/frameworks.py", "harness/providers.py"):
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(ROOT / "adapters", tmp_path / "adapters",
                    ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    throwaway = tmp_path / "adapters" / "zz_throwaway"
    throwaway.mkdir()
    (throwaway / "adapter.py").write_text("ADAPTER = None\n")
    (throwaway / "framework.toml").write_text('dependencies = ["zz-throwaway-framework==1.0"]\n')
    return tmp_path


def _python(tree: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=tree, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_new_folder_is_a_nox_session_a_test_suite_and_a_ci_job(tree: Path):
    listing = _python(tree, "-m", "nox", "-l", "-f", str(tree / "noxfile.py"))
    assert "bench(adapter='zz-throwaway')" in listing
    assert "tests(suite='zz-throwaway')" in listing
    assert frameworks.test_suites(tree)[-1] == "zz-throwaway"
    matrix = json.loads(_python(tree, "-m", "harness.frameworks", "matrix"))
    folders = sorted(p.name.replace("_", "-") for p in (ROOT / "adapters").iterdir() if (p / "framework.toml").exists())
    assert matrix["adapter"] == [*folders, "zz-throwaway"]  # every framework folder, and the new one last
    fw = {f.name: f for f in frameworks.discover(tree)}["zz-throwaway"]
    assert fw.install_args() == ["zz-throwaway-framework==1.0"]  # no constraints.txt in the folder


def test_ci_workflows_take_their_matrix_from_the_folders():
    for workflow in (ROOT / ".github" / "workflows").glob("*.yml"):
        text = workflow.read_text()
        if "matrix.adapter" in text and workflow.name == "history.yml":  # framework x release
            assert "fromJSON(needs.releases.outputs.matrix)" in text
            assert "python -m harness.frameworks history --latest" in text
        elif "matrix.adapter" in text:
            assert "fromJSON(needs.frameworks.outputs.matrix)" in text, workflow.name
            assert "python -m harness.frameworks matrix" in text, workflow.name
            assert "reference, langgraph" not in text, f"{workflow.name} lists frameworks by hand"


@pytest.mark.parametrize(("text", "error"), [
    ('dependencies = "crewai"\n', r"zz_throwaway/framework.toml: dependencies: expected a list"),
    ('dependencies = []\nextras = ["x"]\n', r"zz_throwaway/framework.toml: unknown field\(s\) extras"),
    ('dependencies = []\ncounterpart = "nothing-here"\n', r"framework.toml: counterpart: 'nothing-here' is no"),
    ('dependencies = []\ncounterpart = ["langgraph"]\n', r"framework.toml: counterpart: expected an adapter"),
    (None, r"zz_throwaway/framework.toml: missing"),
])
def test_a_malformed_manifest_names_file_and_field(tree: Path, text: str | None, error: str):
    manifest = tree / "adapters" / "zz_throwaway" / "framework.toml"
    if text is None:
        manifest.unlink()
    else:
        manifest.write_text(text)
    with pytest.raises(frameworks.FrameworkError, match=error):
        frameworks.discover(tree)


def test_js_adapters_name_their_python_counterparts():
    found = {f.name: f.counterpart for f in frameworks.discover()}
    assert found["langgraph-js"] == "langgraph" and found["openai-agents-js"] == "openai-agents"


def test_variants_are_read():
    autogen = {f.name: f for f in frameworks.discover()}["autogen"]
    assert [v.adapter for v in autogen.variants] == ["adapters.autogen.adapter:AutogenLoadStateAdapter"]


def test_requirements_and_sharded_matrix_from_the_command_line(tree: Path):
    assert _python(tree, "-m", "harness.frameworks", "requirements", "zz-throwaway").split() == \
        ["zz-throwaway-framework==1.0"]
    matrix = json.loads(_python(tree, "-m", "harness.frameworks", "matrix", "--shards", "3"))
    assert matrix["shard"] == [1, 2, 3] and matrix["of"] == [3]
    bad = subprocess.run([sys.executable, "-m", "harness.frameworks", "requirements", "nope"], cwd=tree,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown framework 'nope'" in bad.stderr


def test_a_protocol_folder_is_a_session_a_suite_and_a_job_with_its_command(tree: Path):
    """An adapter process in another language (docs/adapter-protocol.md): no adapter.py, a [protocol] command."""
    folder = tree / "adapters" / "zz_js"
    folder.mkdir()
    (folder / "framework.toml").write_text('tool_styles = ["async"]\n[stop_modes]\ncancel = "abort()"\n'
                                           '[protocol]\ncommand = ["node", "adapter.mjs"]\n')
    listing = _python(tree, "-m", "nox", "-l", "-f", str(tree / "noxfile.py"))
    assert "tests(suite='zz-js')" in listing and "bench(adapter='zz-js')" in listing
    assert "zz-js" in json.loads(_python(tree, "-m", "harness.frameworks", "matrix"))["adapter"]
    fw = {f.name: f for f in frameworks.discover(tree)}["zz-js"]
    assert fw.protocol is not None and fw.protocol.command == ("node", "adapter.mjs")
    assert not fw.protocol.npm  # no package-lock.json: nothing for npm ci to install
    (folder / "package-lock.json").write_text("{}")
    assert fw.protocol.npm
    assert fw.install_args() == []


def test_a_python_adapter_folder_with_a_lockfile_has_its_npm_packages_installed(tree: Path):
    """An orchestrator CLI from npm (adapter.py drives it; its package and Node pinned by package-lock.json): its
    sessions run `npm ci` in the folder as a protocol folder's do."""
    folder = tree / "adapters" / "zz_cli"
    folder.mkdir()
    (folder / "adapter.py").write_text("")
    (folder / "framework.toml").write_text('tool_styles = ["mcp"]\n[stop_modes]\nsigint = "SIGINT to the CLI"\n')
    fw = {f.name: f for f in frameworks.discover(tree)}["zz-cli"]
    assert fw.protocol is None and not fw.npm
    (folder / "package-lock.json").write_text("{}")
    assert fw.npm


def test_a_malformed_protocol_names_file_and_field(tree: Path):
    folder = tree / "adapters" / "zz_js"
    folder.mkdir()
    manifest = folder / "framework.toml"
    manifest.write_text('[protocol]\ncommand = "node adapter.mjs"\n')
    with pytest.raises(frameworks.FrameworkError, match=r"zz_js/framework.toml: protocol.command: expected a list"):
        frameworks.discover(tree)
    manifest.write_text('[protocol]\ncommand = ["node"]\nnpm = true\n')
    with pytest.raises(frameworks.FrameworkError, match=r"framework.toml: protocol: expected a table with command"):
        frameworks.discover(tree)
    manifest.write_text('dependencies = []\n')
    with pytest.raises(frameworks.FrameworkError, match=r"zz_js/framework.toml: neither an adapter.py beside it nor"):
        frameworks.discover(tree)
    manifest.write_text('[protocol]\ncommand = ["node", "adapter.mjs"]\n')
    (folder / "adapter.py").write_text("ADAPTER = None\n")
    with pytest.raises(frameworks.FrameworkError, match=r"framework.toml: protocol: the folder has an adapter.py"):
        frameworks.discover(tree)
