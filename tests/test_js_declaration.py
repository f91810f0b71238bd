"""A JS adapter's declaration is written once, in its framework.toml: a mode text changed there, and in no .mjs
file, is what `stopbench list` prints, what the report reads, and what the Node process says in its capabilities
(the harness hands it the declaration; the kit says it back)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.contract import protocol, registry
from harness.frameworks import load
from harness.results.site import mode_texts

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
ROOT = Path(__file__).resolve().parent.parent
#: a planted JS adapter folder that needs no package beyond stopbench-tools (tests/test_repro.py runs it too)
PLANTED = ROOT / "tests" / "known_answer" / "js_emails_after_stop"
#: the built-in JS adapters, each checked when its packages are installed here (its nox session installs them)
BUILT_IN = ("reference_js", "vercel_ai", "mastra", "openai_agents_js", "langgraph_js")
CHANGED = "pressed by the test: a text that lives in framework.toml only"


def _tree(tmp_path: Path, folder: Path) -> Path:
    """A checkout's adapters/ and js/ (no installed packages), with `folder` among the adapters and its packages
    installed as npm installs them: its own node_modules when it has one (linked), and stopbench-tools copied from
    this tree's js/ (package.json's `file:` dependency, installed with install-links)."""
    tree = tmp_path / "checkout"
    skip = shutil.ignore_patterns("__pycache__", "node_modules")
    shutil.copytree(ROOT / "adapters", tree / "adapters", ignore=skip)
    shutil.copytree(ROOT / "js", tree / "js", ignore=skip)
    copy = tree / "adapters" / folder.name
    if not copy.exists():
        shutil.copytree(folder, copy, ignore=skip)
    if (folder / "node_modules").is_dir():
        (copy / "node_modules").symlink_to(folder / "node_modules")
    else:
        shutil.copytree(tree / "js" / "stopbench-tools", copy / "node_modules" / "stopbench-tools")
    return tree


def _with_text(manifest: str, mode: str, text: str) -> str:
    """framework.toml's text with `mode`'s entry in [stop_modes] saying `text` (in place of a one-line or a
    multi-line string)."""
    key = f"\n{mode} = "
    start = manifest.index(key, manifest.index("[stop_modes]")) + len(key)
    end = manifest.index('"""', start + 3) + 3 if manifest.startswith('"""', start) else manifest.index("\n", start)
    return f'{manifest[:start]}"{text}"{manifest[end:]}'


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.mjs"))}


@pytest.mark.parametrize("folder", [
    PLANTED,
    *[pytest.param(ROOT / "adapters" / f, marks=pytest.mark.skipif(
        not (ROOT / "adapters" / f / "node_modules").is_dir(), reason=f"adapters/{f}: npm ci not run here"))
      for f in BUILT_IN]], ids=lambda f: f.name)
def test_a_mode_text_changed_in_framework_toml_shows_in_list_report_and_capabilities(folder, tmp_path, monkeypatch,
                                                                                       capsys):
    tree = _tree(tmp_path, folder)
    copy = tree / "adapters" / folder.name
    declared = load(copy)
    name, mode = declared.name, next(iter(declared.adapter.stop_modes))
    scripts = _digests(copy)
    manifest = copy / "framework.toml"
    manifest.write_text(_with_text(manifest.read_text(), mode, CHANGED))
    assert load(copy).adapter.stop_modes[mode] == CHANGED

    said: list[dict] = []
    parse = protocol.parse_capabilities
    monkeypatch.setattr(protocol, "parse_capabilities", lambda params, where: said.append(params) or
                        parse(params, where))
    monkeypatch.setattr(registry, "ADAPTERS_DIR", tree / "adapters")
    monkeypatch.setattr("harness.frameworks.ROOT", tree)  # where an older `list` read the declarations
    assert main(["list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    at = next(i for i, x in enumerate(listing) if x.startswith(f"  {name}  "))
    assert "not installed" not in listing[at] and "not available" not in listing[at], listing[at]
    assert f"    stop {mode:<20} {CHANGED}" in listing[at + 1:], listing[at:]

    assert mode_texts(tree)[(name, mode)] == CHANGED  # what the report's pages show for the button

    (capabilities,) = [p for p in said if p.get("name") == name]  # the probe of `list`: the Node process's own
    assert capabilities["stop_modes"][mode]["primitive"] == CHANGED
    assert {m: s["primitive"] for m, s in capabilities["stop_modes"].items()} == load(copy).adapter.stop_modes

    assert _digests(copy) == scripts  # no .mjs file touched
    assert all(CHANGED not in p.read_text() for p in copy.glob("*.mjs"))
