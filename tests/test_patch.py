"""Bench a patch: a framework installed from a folder (its release) and from a patched copy of that folder, the
same matrix on each, then `stopbench compare --adapter`: exactly the patched button's change, nothing else. Rows
say where the framework came from (`sources`, PEP 610), and a row of the patch is never taken for the release's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contract.sources import describe
from harness.results.rows import raw_file, read_rows
from harness.trial.staleness import is_current
from tests.known_answer.patched import PATCH, STOPDEMO

ROOT = Path(__file__).resolve().parent.parent
ADAPTER = "tests.known_answer.patched:DemoFrameworkAdapter"
NAME = "known-demo-framework"
#: four anchors x three repetitions a mode: enough trial cells for a change to show beyond the run-to-run spread
ANCHORS = [f"on:effect_received:email:{k}" for k in range(1, 5)]
PYPROJECT = ('[build-system]\nrequires = ["uv_build>=0.8"]\nbuild-backend = "uv_build"\n'
             '[project]\nname = "stopdemo"\nversion = "1.0.0"\n')


def framework_folder(where: Path, patched: bool) -> Path:
    (where / "src" / "stopdemo").mkdir(parents=True)
    (where / "pyproject.toml").write_text(PYPROJECT)
    source = STOPDEMO.replace(*PATCH) if patched else STOPDEMO
    assert source != STOPDEMO or not patched
    (where / "src" / "stopdemo" / "__init__.py").write_text(source)
    return where


def install(folder: Path, target: Path) -> None:
    """`pip install FOLDER` into a folder of its own (uv: it builds and installs without a virtualenv)."""
    subprocess.run([shutil.which("uv") or "uv", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    str(folder)], check=True, timeout=300)


def bench(target: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    args = ["run", "--adapter", ADAPTER, "--scenario", "q3_report", "--reps", "3", "--observe-ms", "100",
            "--jobs", "2", "--out", str(out), *[a for o in ANCHORS for a in ("--offset", o)]]
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uv") is None, reason="installs the test's framework with uv")
def test_a_patch_benched_against_its_release_shows_exactly_the_patched_change(tmp_path):
    release = framework_folder(tmp_path / "stopdemo-release", patched=False)
    patched = framework_folder(tmp_path / "stopdemo-patched", patched=True)
    install(release, tmp_path / "site-release")
    install(patched, tmp_path / "site-patched")

    done = bench(tmp_path / "site-release", tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    # the patch's rows go into the same folder: not one of the release's rows counts as the patch's
    again = bench(tmp_path / "site-patched", tmp_path / "results")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "24 planned; 0 current in" in again.stderr and "24 there measured on other code" in again.stderr, \
        again.stderr[-3000:]
    patch = tmp_path / "patch"
    shutil.copytree(tmp_path / "results", patch)
    rows, _ = read_rows([raw_file(patch, NAME)])
    assert {r["sources"]["stopdemo"]["path"] for r in rows} == {str(patched)}
    assert {r["status"] for r in rows} == {"ok"}
    assert len(rows) == 24  # the newest row of each trial: the patch's

    # the release's published rows: the first bench's alone
    published = tmp_path / "published"
    (published / "raw").mkdir(parents=True)
    lines = raw_file(tmp_path / "results", NAME).read_text().splitlines()
    raw_file(published, NAME).write_text("\n".join(lines[:24]) + "\n")
    (patch / "raw" / f"{NAME}.jsonl").write_text("\n".join(lines[24:]) + "\n")

    out = subprocess.run([sys.executable, "-m", "harness.cli", "compare", str(published), str(patch), "--adapter",
                          NAME, "--anchors", "event"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"package sources that differ: stopdemo: {release} -> {patched}" in text
    table = {line.split("|")[2].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
             for line in text.splitlines() if line.startswith(f"| {NAME} |")}
    assert set(table) == {"cancel", "stop"}
    assert not any("->" in c and "**" in c for c in table["cancel"][4:]), table["cancel"]  # cancel: unchanged
    stop = table["stop"]
    changed = {i: c for i, c in enumerate(stop) if c.startswith("**")}
    # the patched stop no longer stops: it did not abort in any of the 12 trials; 1 email leaked (the one in
    # flight) became 2-5 (the rest of the job)
    assert changed == {4: "**yes -> no (12/12)** (p 0.00025)", 11: "**1 -> 3.5 (2..5)** (p 0.00025)"}, stop
    assert "1 of 2 compared row(s) changed in a count or a verdict" in text
    assert f"- {NAME} / stop / none, can abort: yes -> no (12/12)" in text
    assert "  - old: 0/12\n  - new: 12/12: `" in text, text


def test_a_rows_source_is_part_of_what_makes_it_current():
    release = {"adapter_digest": "d", "versions": {"fw": "1.0"}}
    patched = {**release, "sources": {"fw": {"url": "file:///src/fw", "path": "/src/fw"}}}
    assert is_current(release, "d", {"fw": "1.0"}, {})
    assert not is_current(release, "d", {"fw": "1.0"}, patched["sources"])
    assert not is_current(patched, "d", {"fw": "1.0"}, {})
    assert is_current(patched, "d", {"fw": "1.0"}, {"fw": {"url": "file:///src/fw", "path": "/src/fw"}})


def test_pep_610_direct_urls_say_path_ref_and_commit():
    assert describe({"url": "https://github.com/acme/fw.git",
                     "vcs_info": {"vcs": "git", "requested_revision": "fix-stop", "commit_id": "abc123"}}) == {
        "url": "https://github.com/acme/fw.git", "ref": "fix-stop", "commit": "abc123"}
    assert describe({"url": "file:///tmp/fw-1.0-py3-none-any.whl",
                     "archive_info": {"hashes": {"sha256": "ff"}}}) == {
        "url": "file:///tmp/fw-1.0-py3-none-any.whl", "path": "/tmp/fw-1.0-py3-none-any.whl",
        "hashes": {"sha256": "ff"}}
    assert describe({"url": "file:///nowhere/fw", "dir_info": {"editable": True}}) == {
        "url": "file:///nowhere/fw", "path": "/nowhere/fw", "editable": True}
