"""Mitigations the harness adds around any adapter, without changing the adapter.

- saga: every committed effect registers its compensation (recall / close / cancel / delete); after
  the stop the harness runs them in reverse for every effect that committed after the stop, and
  again after the run went quiet, for effects that landed late.
- idempotent: every tool call carries an Idempotency-Key derived from the run, the tool and its
  arguments, so a resume cannot commit the same effect twice. After a saga compensated an effect, its
  key moves to a new generation, so a resume may do that effect again (once).

Both work for in-process tools (the Toolbox hooks) and for the MCP server (which gets the same
policy through its command line and shares the trial folder's files).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from harness.tools import TOOL_KIND

MITIGATIONS = ("none", "saga", "idempotent", "saga+idempotent")
SAGA_LOG = "saga.jsonl"
GENERATIONS = "saga-generations.json"


def parse(name: str) -> tuple[bool, bool]:
    """(saga, idempotent)"""
    if name not in MITIGATIONS:
        raise ValueError(f"unknown mitigation {name!r} (known: {', '.join(MITIGATIONS)})")
    return "saga" in name, "idempotent" in name


def _logical(tool: str, arguments: dict[str, Any]) -> str:
    return hashlib.sha256(f"{tool}:{json.dumps(arguments, sort_keys=True)}".encode()).hexdigest()[:16]


class KeyPolicy:
    """Idempotency-Key = hash(run, tool, arguments, generation of that logical effect)."""

    def __init__(self, run_id: str, workdir: Path):
        self.run_id = run_id
        self.generations = workdir / GENERATIONS

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        if tool not in TOOL_KIND:
            return None
        logical = _logical(tool, arguments)
        try:
            generation = json.loads(self.generations.read_text()).get(logical, 0)
        except (OSError, ValueError):
            generation = 0
        return f"{self.run_id}-{logical}-{generation}"


class SagaLog:
    """Committed effects in the order they were seen (a JSON Lines file shared with the MCP server)."""

    def __init__(self, workdir: Path):
        self.path = workdir / SAGA_LOG
        self._lock = threading.Lock()

    def record(self, tool: str, arguments: dict[str, Any], answer: dict[str, Any]) -> None:
        if tool not in TOOL_KIND or answer.get("status") != "committed":
            return
        line = json.dumps({"kind": TOOL_KIND[tool], "effect_id": answer["effect_id"],
                           "committed_ns": answer.get("committed_ns", time.monotonic_ns()),
                           "logical": _logical(tool, arguments)})
        with self._lock, self.path.open("a") as f:
            f.write(line + "\n")

    def entries(self) -> list[dict[str, Any]]:
        try:
            return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        except OSError:
            return []


def bump_generations(workdir: Path, logicals: list[str]) -> None:
    path = workdir / GENERATIONS
    try:
        generations = json.loads(path.read_text())
    except (OSError, ValueError):
        generations = {}
    for logical in logicals:
        generations[logical] = generations.get(logical, 0) + 1
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(generations))
    tmp.replace(path)
