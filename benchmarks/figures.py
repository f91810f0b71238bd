"""How a benchmark leaves its figures: a JSON file under benchmarks/results/ and an aligned table on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def publish(result: dict[str, Any], out: Path, digits: int = 2) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    width = max(map(len, result))
    for k, v in result.items():
        print(f"{k:<{width}}  {v:.{digits}f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
