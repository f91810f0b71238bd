"""What an adapter declares is data in its framework folder: a new folder whose framework.toml declares two stop
modes shows them in `stopbench list`, in the report (its button pages) and in the CI matrix, with no other file
touched; and a malformed declaration names its file and field."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import frameworks
from harness.contract.adapter import Adapter

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "zz_two_stops"
NAME = "zz-two-stops"
TEXTS = {"task_cancel": "task cancel on the job that waits for the stop flag",
         "raise_flag": "the stop flag the job loop reads"}

MANIFEST = f'''dependencies = []
packages = ["httpx"]
tool_styles = ["async"]

[stop_modes]
task_cancel = "{TEXTS['task_cancel']}"
raise_flag = "{TEXTS['raise_flag']}"
'''

ADAPTER = '''import asyncio

from harness.contract.kit import KitAdapter


class TwoStopsAdapter(KitAdapter):
    async def start(self) -> None:
        self.job = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while not self.stop_pressed.is_set():
            await asyncio.sleep(0.005)

    stop_raise_flag = KitAdapter.flag_and_wait


ADAPTER = TwoStopsAdapter
'''


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the checkout with one new framework folder, its only difference."""
    tree = tmp_path / "checkout"
    skip = shutil.ignore_patterns("__pycache__", "node_modules")  # its JS adapters are then not installed there
    for rel in ("harness", "adapters", "scenarios", "data"):
        shutil.copytree(ROOT / rel, tree / rel, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    folder = tree / "adapters" / FOLDER
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "adapter.py").write_text(ADAPTER)
    (folder / "framework.toml").write_text(MANIFEST)
    return tree


def _run(tree: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=tree, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_a_folder_declaring_two_stop_modes_shows_them_in_list_report_and_matrix(checkout: Path, tmp_path: Path):
    listing = _run(checkout, "-m", "harness.cli", "list").splitlines()
    at = next(i for i, line in enumerate(listing) if line.startswith(f"  {NAME}  "))
    assert listing[at].endswith("tools: async")
    stops = [f"    stop {mode:<20} {text}" for mode, text in TEXTS.items()]
    assert listing[at + 1:at + 4] == [*stops, "    resume: none"]

    assert NAME in json.loads(_run(checkout, "-m", "harness.frameworks", "matrix"))["adapter"]

    out = tmp_path / "results"
    _run(checkout, "-m", "harness.cli", "run", "--adapter", NAME, "--scenario", "q3_report", "--offset", "at:50ms",
         "--out", str(out))
    rows = [json.loads(line) for line in next((out / "raw").glob("*.jsonl")).read_text().splitlines()]
    assert sorted((r["adapter"], r["mode"], r["status"]) for r in rows) == [
        (NAME, "raise_flag", "ok"), (NAME, "task_cancel", "ok")]
    subprocess.run([sys.executable, "-m", "harness.cli", "report", str(out)], cwd=checkout, capture_output=True,
                   timeout=300)  # its verdict on two rows is beside the point; the pages are written
    for mode, text in TEXTS.items():
        assert text in (out / "site" / "buttons" / f"{NAME}--{mode}.html").read_text()
        assert text in (out / "site" / "frameworks" / f"{NAME}.html").read_text()


def test_a_class_in_a_framework_folder_gets_its_declarations_and_may_not_restate_them():
    from adapters.reference.adapter import ReferenceAdapter

    declared = {f.name: f for f in frameworks.discover()}["reference"].adapter
    assert ReferenceAdapter.name == "reference" and ReferenceAdapter.stop_modes == declared.stop_modes
    assert ReferenceAdapter.resume_primitive == declared.resume_primitive
    assert ReferenceAdapter.packages == ("openai", "anthropic", "google-genai")
    assert ReferenceAdapter.providers == ("openai", "anthropic", "gemini")
    with pytest.raises(TypeError, match=r"stop_modes: declared in .*adapters/reference/framework.toml"):
        type("Again", (ReferenceAdapter,), {"__module__": ReferenceAdapter.__module__, "stop_modes": {"x": "y"}})


def test_outside_a_framework_folder_the_class_declares_them():
    class Outside(Adapter):
        name = "outside"
        stop_modes = {"cancel": "cancel it"}

    assert Outside.stop_modes == {"cancel": "cancel it"} and Outside.packages == () and Outside.resume_primitive == ""


def test_variants_declare_their_name_and_what_differs():
    found = {f.name: f for f in frameworks.discover()}
    adk = found["google-adk"].declaration("adapters.google_adk.adapter", "GoogleAdkResumableAdapter")
    assert adk.name == "google-adk-resumable"
    assert list(adk.stop_modes) == ["break", "aclose", "task_cancel", "abort_signal", "end_invocation"]
    assert adk.modes_since == {"abort_signal": ("google-adk", "2.11")}  # the framework's, for the modes it has
    rerun = found["crewai"].declaration("stopbench.adapters.crewai.adapter", "CrewAIRerunAdapter")  # in a wheel too
    assert rerun.name == "crewai-rerun" and rerun.stop_modes == found["crewai"].adapter.stop_modes
    assert rerun.resume_primitive != found["crewai"].adapter.resume_primitive


@pytest.mark.parametrize(("toml", "error"), [
    ('[stop_modes]\ncancel = ""\n', r"stop_modes.cancel: expected a line of text"),
    ('tool_styles = ["threads"]\n', r"tool_styles: expected some of sync, async, mcp"),
    ('providers = ["bedrock"]\n', r"providers: expected some of openai, anthropic, gemini, each once"),
    ('providers = ["openai", "openai"]\n', r"providers: expected some of openai, anthropic, gemini, each once"),
    ('[stop_modes]\ncancel = "c"\n[unsupported.cancel]\nthreads = "no"\n', r"unsupported.cancel.threads: not a"),
    ('[stop_modes]\ncancel = "c"\n[modes_since]\ncancel = "1.2"\n', r"modes_since.cancel: expected \{ package"),
    ('[environment]\nX = 1\n', r"environment: expected NAME"),
    ('[stop_modes]\ncancel = "c"\n[stop_signals]\ncancel = "SIGKILL"\n[protocol]\ncommand = ["node", "a.mjs"]\n',
     r"stop_signals.cancel: expected one of SIGTERM, SIGINT, got 'SIGKILL'"),
    ('[stop_modes]\ncancel = "c"\n[stop_signals]\nsigterm = "SIGTERM"\n[protocol]\ncommand = ["node", "a.mjs"]\n',
     r"stop_signals.sigterm: not a declared stop mode \(cancel\)"),
    ('[stop_modes]\nsigterm = "s"\n[stop_signals]\nsigterm = "SIGTERM"\n',
     r"stop_signals: only an adapter process \(\[protocol\]\) is stopped by a signal"),
    ('[[variants]]\nadapter = "a.b:C"\n', r"variants\[0\].name: expected the variant's adapter name"),
    ('[stop_modes]\ncancel = "c"\n[[variants]]\nadapter = "a.b:C"\nname = "v"\nmodes = ["nope"]\n',
     r"variants\[0\].modes: \['nope'\]"),
])
def test_a_malformed_declaration_names_file_and_field(tmp_path: Path, toml: str, error: str):
    (tmp_path / "framework.toml").write_text(toml)
    with pytest.raises(frameworks.FrameworkError, match=r"framework.toml: .*" + error):
        frameworks.load(tmp_path)


def test_list_shows_the_declared_stop_modes_of_a_framework_not_installed_here(checkout: Path):
    """The declarations are data: `stopbench list` reads them without importing the framework, so a framework
    whose package is not in this environment still shows its buttons (said not installed, with the why)."""
    adapter = checkout / "adapters" / FOLDER / "adapter.py"
    adapter.write_text("import a_framework_not_installed_here  # noqa: F401\n" + ADAPTER)
    listing = _run(checkout, "-m", "harness.cli", "list").splitlines()
    at = next(i for i, line in enumerate(listing) if line.startswith(f"  {NAME}  "))
    assert "[not installed here: " in listing[at] and listing[at].endswith("tools: async"), listing[at]
    stops = [f"    stop {mode:<20} {text}" for mode, text in TEXTS.items()]
    assert listing[at + 1:at + 4] == [*stops, "    resume: none"]
