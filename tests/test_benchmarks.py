"""The benchmark commands run to the end (their figures are not asserted: speed is for benchmarks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_world_bench_completes_and_writes_its_figures(tmp_path):
    out = tmp_path / "world.json"
    r = subprocess.run([sys.executable, "benchmarks/world_bench.py", "--streams", "2", "--tokens", "200",
                        "--repeats", "1", "--pacing-tokens", "10", "--trials", "3", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    figures = json.loads(out.read_text())
    assert "anchor -> stop" in r.stdout and figures


def test_world_soak_completes_and_writes_its_figures(tmp_path):
    out = tmp_path / "soak.json"
    r = subprocess.run([sys.executable, "benchmarks/world_soak.py", "--runs", "30", "--every", "10", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    figures = json.loads(out.read_text())
    assert figures["runs"] == 30 and figures["deleted"] is True and figures["rss_mb_at_end"] > 0


@pytest.mark.slow
def test_cost_profile_splits_each_subjects_cpu_and_finds_no_import_prepare_could_do(tmp_path):
    """The reference's subjects import nothing heavy after the fork (its prepare() imports the MCP client and
    what the openai client loads lazily); the buckets add up to each subject's own CPU."""
    out = tmp_path / "cost.json"
    r = subprocess.run([sys.executable, "benchmarks/cost_profile.py", "reference", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    figures = json.loads(out.read_text())
    assert figures["trials"] == 3 and sorted(figures["styles"]) == ["async", "mcp", "sync"]
    for style, s in figures["styles"].items():
        own = s["subject_cpu_s"] - s["children_s"]
        buckets = [k for k in s if k.endswith("_s") and k not in ("subject_cpu_s", "children_s", "harness_s")]
        assert abs(sum(s[k] for k in buckets) - own) < 0.01
        assert 0 <= s["harness_share"] < 1
        assert not [m for m, _ in s["top_imports"] if m.split(".")[0] in ("mcp", "openai")], (style, s["top_imports"])
    assert figures["styles"]["mcp"]["children_s"] > 0  # the MCP server, a child of the subject
