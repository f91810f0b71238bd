"""What a trial is, as typed values: parsed once at the edge (CLI, plan), handed to the subject as objects.

A forked subject inherits these objects; a spawned one gets them as JSON (`SubjectPlan.to_json`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.providers import DEFAULT_PROVIDER
from harness.scenario import DEFAULT_OBSERVE_MS, Offset
from harness.tools.mcp_launch import DEFAULT_LAUNCH, tool_label
from harness.tools.mitigation import Mitigation
from harness.trial.serve.paths import IN_PROCESS

#: what happens to the app hosting the agent after the stop: it closes the agent (`close`: resume, then
#: close()), or it dies without cleanup (`crash`: SIGKILL, as a crash, an OOM kill or a deploy restart would)
HOSTS = ("close", "crash")


@dataclass(frozen=True)
class Deadlines:
    """Seconds each step may take before the trial calls it hung."""

    start: float = 15.0
    trigger: float = 20.0  # from start until the offset fires
    stop: float = 5.0
    wait: float = 5.0  # after stop returned, for the job to end
    settle: float = 10.0  # after the observation floor, for the run to go quiet; else it is a runaway
    resume: float = 30.0
    close: float = 10.0
    grace: float = 3.0  # watchdog slack on top of a step's deadline


class ShardError(ValueError):
    """A --shard value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    """Shard K of N: every N-th trial of the planned matrix, from the K-th on. The plan's order is
    deterministic, so the N shards together are exactly the whole matrix, each trial in one shard."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        k, sep, n = str(text).partition("/")
        if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
            raise ShardError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
        return cls(int(k), int(n))

    def take(self, items: list, cell: Callable[[Any], Hashable] | None = None) -> list:
        """Every N-th item from the K-th on; with `cell`, every N-th cell (items with the same cell, e.g. a cell's
        repetitions, stay in one shard, in their order)."""
        if cell is None:
            return items[self.index - 1::self.count]
        cells = list(dict.fromkeys(map(cell, items)))
        mine = set(cells[self.index - 1::self.count])
        return [item for item in items if cell(item) in mine]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class TrialSpec:
    """One cell of the matrix: adapter x mode x scenario x offset x tools (and, for MCP, how the server is
    launched) x mitigation x host x provider (x a billing profile in place of the scenario's) x serving path x
    repetition."""

    adapter: str
    mode: str
    scenario: str
    offset: Offset
    tool_style: str
    mitigation: Mitigation = field(default_factory=Mitigation)
    rep: int = 0
    seed: int = 0
    mcp_launch: str = DEFAULT_LAUNCH  # harness/tools/mcp_launch.py
    host: str = "close"  # HOSTS
    provider: str = DEFAULT_PROVIDER  # harness/providers.py
    #: the billing profile the world plays in place of the scenario's (harness/billing.py); "" = the scenario's
    billing: str = ""
    serve_path: str = IN_PROCESS  # harness/trial/serve/paths.py: the server and the client's stop, or none

    @property
    def cell(self) -> TrialSpec:
        """The trial cell this is a repetition of (the spec at repetition 0)."""
        return replace(self, rep=0)

    @property
    def tool_label(self) -> str:
        """The tool style as rows and trial ids say it: `mcp+launcher` for a launch variant."""
        return tool_label(self.tool_style, self.mcp_launch)

    def trial_id(self, scenario_hash: str) -> str:
        """The defaults (a direct MCP launch, a host that closes, openai, the scenario's billing, no server) leave the
        id as it always was."""
        host = "" if self.host == "close" else f"|host:{self.host}"
        provider = "" if self.provider == DEFAULT_PROVIDER else f"|provider:{self.provider}"
        billing = f"|billing:{self.billing}" if self.billing else ""
        served = "" if self.serve_path == IN_PROCESS else f"|serve:{self.serve_path}"
        return (f"{self.adapter}|{self.mode}|{self.scenario}@{scenario_hash}|{self.offset.text}|"
                f"{self.tool_label}|{self.mitigation.name}{host}{provider}{billing}{served}|{self.rep}")


@dataclass(frozen=True)
class RunInfo:
    """What the world gave the trial's run, and the trial's own folder."""

    world_url: str
    run_id: str
    model_base_url: str
    services_base_url: str
    workdir: Path

    @property
    def run_url(self) -> str:
        return f"{self.world_url}/runs/{self.run_id}"


@dataclass(frozen=True)
class SubjectPlan:
    """Everything a subject needs to run its trial."""

    spec: TrialSpec
    run: RunInfo
    settle_window_ms: float
    deadlines: Deadlines = field(default_factory=Deadlines)
    #: the observation floor: the subject stays alive and observed at least this long after the stop
    #: (and after resume returns); harness.scenario.DEFAULT_OBSERVE_MS says why
    observe_ms: float = DEFAULT_OBSERVE_MS

    def to_json(self) -> str:
        data = asdict(self)
        data["spec"]["offset"] = self.spec.offset.to_data()  # its data, not its text to parse again
        data["spec"]["mitigation"] = self.spec.mitigation.name
        data["run"]["workdir"] = str(self.run.workdir)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> SubjectPlan:
        data: dict[str, Any] = json.loads(text)
        spec = {**data["spec"], "offset": Offset.from_data(data["spec"]["offset"], "subject plan: offset"),
                "mitigation": Mitigation(data["spec"]["mitigation"])}
        run = {**data["run"], "workdir": Path(data["run"]["workdir"])}
        return cls(spec=TrialSpec(**spec), run=RunInfo(**run), settle_window_ms=data["settle_window_ms"],
                   deadlines=Deadlines(**data["deadlines"]),
                   observe_ms=data["observe_ms"])
