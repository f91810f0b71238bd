"""The benchmark commands run to the end (their figures are not asserted: speed is for benchmarks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
