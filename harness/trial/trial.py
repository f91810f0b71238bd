"""One trial from the parent's side: create the run, fork (or spawn) the subject, watch it, reap, row.

The parent has already imported the adapter's framework, so a forked subject starts warm and
leftovers of one trial (threads, tasks, sockets) die with its subject instead of touching the next.
A watchdog ends a subject that overruns its current step; the row then says `hung` and still
carries everything the ledger recorded up to then.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness.contract.adapter import Adapter
from harness.results import metrics
from harness.scenario import Scenario, parse_offset
from harness.trial.subject import Deadlines, SubjectSpec, subject_main
from harness.trial.world_client import WorldClient
from harness.vocabulary import OWNER_ENV


@dataclass(frozen=True)
class TrialSpec:
    """One cell of the matrix: adapter x mode x scenario x offset x tools x mitigation x repetition."""

    adapter: str
    mode: str
    scenario: str
    offset: str
    tool_style: str
    mitigation: str = "none"
    rep: int = 0
    seed: int = 0

    def trial_id(self, scenario_hash: str) -> str:
        return (f"{self.adapter}|{self.mode}|{self.scenario}@{scenario_hash}|{self.offset}|"
                f"{self.tool_style}|{self.mitigation}|{self.rep}")


def settle_window_ms(scenario: Scenario) -> float:
    """How long nothing may happen before the run counts as settled.

    A request in progress keeps the run from being quiet on its own (the world counts open requests),
    so the window only has to cover the gap between one action of an agent that runs on and its next
    (a tool result and the next model call, a response and the next tool call): the slowest service
    or first token, plus 100 ms for the framework's own bookkeeping.
    """
    slowest = max([*scenario.latency_ms.values(), scenario.ttft_ms,
                   1000 / scenario.tokens_per_s if scenario.tokens_per_s else 0])
    return max(200.0, slowest + 100)


def warm_up(world_url: str) -> None:
    """Do once in the parent what every subject would otherwise do first (lazy imports of the async
    HTTP stack, the audit's /proc readers), so forked subjects inherit it warm."""
    import asyncio

    import httpx

    from harness.trial import audit

    async def touch() -> None:
        async with httpx.AsyncClient(verify=False) as client:
            await client.get(f"{world_url}/health")
        audit.snapshot()

    asyncio.run(touch())


class RunningTrial:
    """A subject in flight. `poll()` until it returns True, then `finish()` for the row."""

    def __init__(self, spec: TrialSpec, scenario: Scenario, adapter_cls: type[Adapter], world: WorldClient,
                 workroot: Path, deadlines: Deadlines, start_method: str = "fork",
                 settle_ms: float | None = None):
        self.spec = spec
        self.scenario = scenario
        self.world = world
        self.deadlines = deadlines
        self.started = time.monotonic()
        self.killed_step: str | None = None
        self.crash: str | None = None
        self.last_step = "launch"
        self.step_deadline_ns = time.monotonic_ns() + int(60e9)  # importing and setting up, at most
        self.exit_code: int | None = None
        offset = parse_offset(spec.offset)
        run = world.create_run(scenario.name, seed=spec.seed,
                               stop_anchor=spec.offset if offset.is_event else None)
        self.run_id = run["run_id"]
        self.workdir = workroot / f"{self.run_id}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.subject_spec = SubjectSpec(
            adapter=spec.adapter, mode=spec.mode, tool_style=spec.tool_style, offset=spec.offset,
            world_url=world.url, run_id=self.run_id, model_base_url=run["model_base_url"],
            services_base_url=run["services_base_url"], workdir=str(self.workdir), seed=spec.seed,
            settle_window_ms=settle_window_ms(scenario) if settle_ms is None else settle_ms, deadlines=deadlines,
            mitigation=spec.mitigation,
        )
        self._buf = b""
        read_fd, write_fd = os.pipe()
        self.proc: subprocess.Popen | None = None
        if start_method == "fork":
            gc.freeze()  # keep the collector from touching (and so copying) the parent's pages in the child
            self.pid = os.fork()
            if self.pid == 0:  # the subject
                code = 3
                try:
                    os.close(read_fd)
                    os.setpgid(0, 0)
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    code = subject_main(self.subject_spec, adapter_cls, scenario, write_fd)
                finally:
                    os._exit(code)
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.trial.spawned", self.subject_spec.to_json(), str(write_fd),
                 json.dumps(scenario.raw)],
                pass_fds=[write_fd], start_new_session=True, env={**os.environ, OWNER_ENV: f"run:{self.run_id}"},
            )
            self.pid = self.proc.pid
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.read_fd = read_fd

    def _read_pipe(self) -> None:
        try:
            while chunk := os.read(self.read_fd, 65536):
                self._buf += chunk
        except BlockingIOError:
            pass
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            msg = json.loads(line)
            if "crash" in msg:
                self.crash = msg["crash"]
            elif "step" in msg:
                self.last_step = msg["step"]
                self.step_deadline_ns = msg.get("deadline_ns", self.step_deadline_ns)

    def poll(self) -> bool:
        """True once the subject is gone (exited, or ended by the watchdog)."""
        self._read_pipe()
        if self._reaped_exit():
            return True
        if time.monotonic_ns() > self.step_deadline_ns and self.last_step != "done":
            self.killed_step = self.last_step
            self.kill()
            return True
        return False

    def _reaped_exit(self) -> bool:
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return False
            self.exit_code = code
            return True
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.exit_code = os.waitstatus_to_exitcode(status)
        return True

    def kill(self) -> None:
        """End the subject and everything in its process group."""
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc is not None:
            self.exit_code = self.proc.wait()
        else:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.exit_code = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                pass

    def finish(self) -> dict[str, Any]:
        """After the subject is gone: reap leftovers, read the ledger, compute the row."""
        self._read_pipe()
        os.close(self.read_fd)
        if self.killed_step:
            self.world.mark(self.run_id, "watchdog_killed", data={"step": self.killed_step})
            # what was already in flight still lands: let it, so the row counts it
            self.world.quiet(self.run_id, self.subject_spec.settle_window_ms, self.deadlines.settle * 1000)
        events = self.world.ledger(self.run_id)["events"]
        reaped = reap_run(self.run_id, events, self.pid)
        data = {"processes": reaped}
        t = self.world.mark(self.run_id, "reaped", data=data)
        events.append({"t": t, "event": "mark", "name": "reaped", "data": data})  # as the world recorded it
        row = metrics.compute(events, self.scenario, parse_offset(self.spec.offset))
        status, reason = metrics.status(events, self.exit_code, self.crash, self.killed_step)
        row.update(status=status, reason=reason, run_id=self.run_id,
                   duration_s=round(time.monotonic() - self.started, 3))
        return row


    def finish_quietly(self) -> None:
        """On interrupt: no row (the trial reruns next time), but nothing of it left running."""
        try:
            os.close(self.read_fd)
        except OSError:
            pass
        try:
            events = self.world.ledger(self.run_id)["events"]
        except Exception:  # the world may be going down with the same Ctrl-C
            events = []
        reap_run(self.run_id, events, self.pid)


def processes_of_runs(run_ids: set[str] | list[str]) -> list[dict[str, Any]]:
    """Live processes of these runs: marked by the env, or an MCP server pointed at one of them."""
    ids = set(run_ids)
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if p.environ().get(OWNER_ENV, "").removeprefix("run:") in ids or any(f"/runs/{i}" in cmd for i in ids):
                found.append(p.info)
        except psutil.Error:
            continue
    return found


def reap_run(run_id: str, events: list[dict[str, Any]], subject_pid: int) -> list[dict[str, Any]]:
    """Kill every process of the run still alive; say which, and how much memory each held."""
    candidates: dict[int, str] = {}
    created: dict[int, float] = {}  # pid -> create_time seen by an audit: a reused pid is never killed
    for e in events:
        if e["event"] == "process_registered":
            candidates[e["pid"]] = "registered"
        elif e["event"] == "mark" and e.get("name") == "audit" and e.get("data"):
            for c in e["data"].get("children", []) or []:
                candidates.setdefault(c["pid"], "seen_child")
                created[c["pid"]] = c["create_time"]
    marker = f"run:{run_id}"
    for p in psutil.process_iter(["pid"]):
        try:
            if p.pid != os.getpid() and p.environ().get(OWNER_ENV) == marker:
                candidates.setdefault(p.pid, "marked")
            elif os.getpgid(p.pid) == subject_pid and p.pid != subject_pid:
                candidates.setdefault(p.pid, "process_group")
        except (psutil.Error, OSError):
            continue
    reaped = []
    for pid, source in candidates.items():
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE or pid == os.getpid():
                continue
            if source == "seen_child" and pid in created and abs(p.create_time() - created[pid]) > 0.01:
                continue
            if source == "registered" and "harness" not in " ".join(p.cmdline()):
                continue
            info = {"pid": pid, "source": source, "cmdline": " ".join(p.cmdline()[:4])[:200],
                    "rss": p.memory_info().rss}
            p.kill()
            p.wait(5)
            reaped.append(info)
        except (psutil.Error, OSError):
            continue
    return reaped
