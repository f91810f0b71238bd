"""The reference loop's checkpoint: what lets resume go on without repeating a model turn or an effect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Checkpoint:
    """Completed model turns and tool results, saved after every step (a JSON file in the trial folder)."""

    def __init__(self, path: Path):
        self.path = path
        data = json.loads(path.read_text()) if path.exists() else {}
        self.turns: list[dict[str, Any]] = data.get("turns", [])
        self.results: dict[str, dict[str, Any]] = data.get("results", {})
        self.attempts: dict[str, int] = data.get("attempts", {})

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"turns": self.turns, "results": self.results, "attempts": self.attempts}))
        tmp.replace(self.path)

    def messages(self, system: str, prompt: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        for turn in self.turns:
            out.append(turn)
            for call in turn.get("tool_calls") or []:
                if call["id"] in self.results:
                    out.append({"role": "tool", "tool_call_id": call["id"],
                                "content": self.results[call["id"]]["content"]})
        return out

    def pending_calls(self) -> list[dict[str, Any]]:
        last = (self.turns[-1].get("tool_calls") or []) if self.turns else []
        return [c for c in last if c["id"] not in self.results]
