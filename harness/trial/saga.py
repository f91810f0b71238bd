"""The saga mitigation as a hook the trial calls after the stop (and again after the run went quiet).

Every effectful tool call logged itself with its Idempotency-Key before it left (harness.tools.mitigation);
here each logged call's effect is asked of the service by key (an answer may never have come back:
the framework cancelled the call, the service committed anyway), and what committed after the stop is
compensated, newest first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.tools.loopback_http import LoopbackClient
from harness.tools.mitigation import SagaLog, bump_generations
from harness.tools.toolbox import Toolbox


class Saga:
    def __init__(self, log: SagaLog, workdir: Path, http: LoopbackClient, services_url: str, toolbox: Toolbox):
        self.log = log
        self.workdir = workdir
        self.http = http
        self.services_url = services_url
        self.toolbox = toolbox
        self.compensated: set[str] = set()

    async def late_effects(self, t_called: int) -> list[dict[str, Any]]:
        """Effects committed after the stop and not yet undone, newest first."""
        committed = {e["effect_id"]: e for e in await self._committed()}
        return sorted((e for e in committed.values()
                       if e["committed_ns"] > t_called and e["effect_id"] not in self.compensated),
                      key=lambda e: e["committed_ns"], reverse=True)

    async def compensate(self, effect: dict[str, Any]) -> None:
        await self.toolbox.acompensate(effect["kind"], effect["effect_id"])
        self.compensated.add(effect["effect_id"])

    def forget(self, effects: list[dict[str, Any]]) -> None:
        """A compensated effect's key moves to a new generation, so a resume may do it again (once)."""
        bump_generations(self.workdir, [e["logical"] for e in effects])

    async def _committed(self) -> list[dict[str, Any]]:
        calls = {entry["key"]: entry for entry in self.log.entries()}
        found = []
        for key, call in calls.items():
            r = await self.http.get(f"{self.services_url}/effects", params={"idempotency_key": key,
                                                                            "kind": call["kind"]})
            if r.status_code == 404:  # the call never reached the service
                continue
            r.raise_for_status()
            effect = r.json()
            if effect["status"] == "committed":
                found.append({**call, "effect_id": effect["effect_id"], "committed_ns": effect["committed_ns"]})
        return found

