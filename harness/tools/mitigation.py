"""Mitigations the harness adds around any adapter, without changing the adapter.

- saga: every tool call registers itself with an Idempotency-Key before it leaves (a fresh key per
  call when idempotency is not asked for). After the stop the harness looks each call's effect up by
  its key, so calls whose answer never came back (the framework cancelled them; the service committed
  anyway) count too, and compensates (recall / close / cancel / delete), newest first, every effect
  that committed after the stop; again after the run went quiet, for effects that landed late.
- idempotent: every tool call carries an Idempotency-Key derived from the run, the tool and its
  arguments, so a resume cannot commit the same effect twice. After a saga compensated an effect, its
  key moves to a new generation, so a resume may do that effect again (once).

Both work for in-process tools (the Toolbox hooks) and for the MCP server (which gets the same
policy through its command line and shares the trial folder's files).
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.tools.catalogue import TOOL_KIND, logical_effect

MITIGATIONS = ("none", "saga", "idempotent", "saga+idempotent")
SAGA_LOG = "saga.jsonl"
GENERATIONS = "saga-generations.json"


class MitigationError(ValueError):
    """An unknown mitigation name; the message lists the known ones."""


@dataclass(frozen=True)
class Mitigation:
    """A mitigation, parsed once at the edge (CLI, plan) and handed around as this object."""

    name: str = "none"

    def __post_init__(self) -> None:
        if self.name not in MITIGATIONS:
            raise MitigationError(f"unknown mitigation {self.name!r} (known: {', '.join(MITIGATIONS)})")

    @property
    def saga(self) -> bool:
        return "saga" in self.name

    @property
    def idempotent(self) -> bool:
        return "idempotent" in self.name

    def mcp_server_args(self, workdir: Path, run_id: str) -> list[str]:
        """What the MCP server needs to apply the same policy (it shares the trial folder's files)."""
        if self.name == "none":
            return []
        return ["--mitigation", self.name, "--workdir", str(workdir), "--run-id", run_id]

    def key_policy(self, run_id: str, workdir: Path) -> KeyPolicy | CallKeys | None:
        if self.idempotent:
            return KeyPolicy(run_id, workdir)
        return CallKeys(run_id) if self.saga else None

    def saga_log(self, workdir: Path) -> SagaLog | None:
        return SagaLog(workdir) if self.saga else None


NONE = Mitigation()


class KeyPolicy:
    """Idempotency-Key = hash(run, tool, arguments, generation of that logical effect)."""

    def __init__(self, run_id: str, workdir: Path):
        self.run_id = run_id
        self.generations = workdir / GENERATIONS

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        if tool not in TOOL_KIND:
            return None
        logical = logical_effect(TOOL_KIND[tool], arguments)
        try:
            generation = json.loads(self.generations.read_text()).get(logical, 0)
        except (OSError, ValueError):
            generation = 0
        return f"{self.run_id}-{logical}-{generation}"


class CallKeys:
    """saga without idempotency: a fresh key per call, so the saga can find the call's effect while
    a resume still commits anew, exactly as without keys."""

    def __init__(self, run_id: str):
        self.run_id = run_id

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        return f"{self.run_id}-call-{uuid.uuid4().hex[:16]}" if tool in TOOL_KIND else None


class SagaLog:
    """Effectful calls, with their keys, in the order they were made (JSON Lines shared with the MCP
    server). What each call committed is asked of the service by key: an answer may never come back."""

    def __init__(self, workdir: Path):
        self.path = workdir / SAGA_LOG
        self._lock = threading.Lock()

    def attempt(self, tool: str, arguments: dict[str, Any], key: str | None) -> None:
        if tool in TOOL_KIND and key:
            self._append({"kind": TOOL_KIND[tool], "key": key, "logical": logical_effect(TOOL_KIND[tool], arguments)})

    def _append(self, entry: dict[str, Any]) -> None:
        with self._lock, self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    def entries(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except ValueError:  # the MCP server is still writing that line; the late pass reads it
                continue
        return entries


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
