"""`python -m harness.migrate_summary OLD NEW`: a report's summary.json of format 1 (written before verdicts were
data: the capability table as text) as format 2, once, so `stopbench compare --judgements` can read it.

The only reader of verdict words out of text, and it runs once per old summary, never when a report is read:
format 1 stored `no (3/9: 3 hung in stop); hangs (3/9)`, whose word is what stands before the first ` (` or `;`.
A format-2 summary (`stopbench report` writes it) stores each verdict's word as data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from harness.results.capability import VERDICTS
from harness.results.judgement import Word


def word_of(text: Any) -> Word | None:
    """A format-1 verdict's word; None when the text holds no verdict word."""
    word = str(text).split(" (", 1)[0].split(";", 1)[0].strip()
    return Word(word) if word in Word._value2member_map_ else None


def migrate(old: dict[str, Any]) -> dict[str, Any]:
    """Format 1 -> 2: the scorecard's best button as a best set of one, each capability verdict's word beside its
    text, the claims as they were (their verdicts were words already)."""
    if old.get("format", 1) != 1:
        raise ValueError(f"format {old.get('format')!r}: only format 1 is migrated")
    verdicts: dict[str, dict[str, Any]] = {}
    for line in old.get("capability", []):
        key = f"{line['adapter']}/{line['mode']}"
        verdicts[key] = {v.column: {"word": str(w), "text": str(line[v.column])} for v in VERDICTS
                         if (w := word_of(line.get(v.column))) is not None}
    scorecard = [{**card, "best_set": [[card["best"]["adapter"], card["best"]["mode"]]]}
                 for card in old.get("scorecard", [])]
    return {**old, "format": 2, "migrated_from": 1, "scorecard": scorecard, "capability_verdicts": verdicts}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m harness.migrate_summary OLD/summary.json NEW/summary.json", file=sys.stderr)
        return 2
    src, dst = map(Path, argv)
    try:
        data = migrate(json.loads(src.read_text()))
    except (OSError, ValueError) as e:
        print(f"{src}: {e}", file=sys.stderr)
        return 2
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(dst)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
