"""benchmarks/full_run.py wraps `nox`, so it runs on the machine's Python, outside every environment: it must
start without the project installed, from any folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "full_run.py"


def test_it_starts_without_the_project_installed(tmp_path: Path):
    # -S: no site-packages, so not the editable install of the project either
    done = subprocess.run([sys.executable, "-S", str(SCRIPT), "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "CPU floor" in done.stdout
