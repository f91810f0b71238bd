"""Inside the subject process: one trial's steps, each stamped as a mark in the world's ledger.

baseline audit -> start -> stop at the offset -> wait (bounded) -> settle -> audit -> resume ->
settle -> audit -> close -> audit. Each step has a deadline; the step being run and its deadline
are written to the watchdog pipe, so the parent can end a subject whose loop is stuck.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from harness.clock import sleep_until_ns
from harness.contract.adapter import Adapter, McpServer, NoResume, TrialContext
from harness.scenario import Offset, Scenario, parse_offset
from harness.tools import mitigation
from harness.tools.mitigation import bump_generations
from harness.tools.toolbox import Toolbox
from harness.trial import audit
from harness.vocabulary import OWNER_ENV


@dataclass
class Deadlines:
    """Seconds each step may take before the trial calls it hung."""

    start: float = 15.0
    trigger: float = 20.0  # from start until the offset fires
    stop: float = 5.0
    wait: float = 5.0  # after stop returned, for the job to end
    settle: float = 10.0
    resume: float = 30.0
    close: float = 10.0
    grace: float = 3.0  # watchdog slack on top of a step's deadline


@dataclass
class SubjectSpec:
    """Everything a subject needs; JSON-able so a spawned subject gets the same as a forked one."""

    adapter: str
    mode: str
    tool_style: str
    offset: str
    world_url: str
    run_id: str
    model_base_url: str
    services_base_url: str
    workdir: str
    seed: int
    settle_window_ms: float
    deadlines: Deadlines = field(default_factory=Deadlines)
    model_name: str = "scripted-model"
    mitigation: str = "none"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SubjectSpec:
        data = json.loads(text)
        data["deadlines"] = Deadlines(**data["deadlines"])
        return cls(**data)


class Subject:
    def __init__(self, spec: SubjectSpec, adapter_cls: type[Adapter], scenario: Scenario, watchdog_fd: int):
        self.spec = spec
        self.adapter_cls = adapter_cls
        self.scenario = scenario
        self.offset: Offset = parse_offset(spec.offset)
        self.watchdog_fd = watchdog_fd
        self.run_url = f"{spec.world_url}/runs/{spec.run_id}"
        self.own_tasks: set[asyncio.Task] = set()
        self.http: httpx.AsyncClient | None = None
        self.pending: list[dict[str, Any]] = []  # marks not yet sent
        self.baseline: dict[str, Any] = {}
        self.t_called: int | None = None
        saga, _ = mitigation.parse(spec.mitigation)
        workdir = Path(spec.workdir)
        self.saga = mitigation.SagaLog(workdir) if saga else None
        self.compensated: set[str] = set()
        self.toolbox = Toolbox(spec.services_base_url,
                               key_policy=mitigation.key_policy(spec.mitigation, spec.run_id, workdir),
                               on_attempt=self.saga.attempt if self.saga else None)

    # --- plumbing --------------------------------------------------------------------------------

    def step(self, name: str, seconds: float) -> None:
        deadline = time.monotonic_ns() + int((seconds + self.spec.deadlines.grace) * 1e9)
        os.write(self.watchdog_fd, (json.dumps({"step": name, "deadline_ns": deadline}) + "\n").encode())

    async def enter(self, name: str, seconds: float) -> None:
        """Start a step that may overrun: what is marked so far must be in the ledger before it."""
        await self.flush()
        self.step(name, seconds)

    async def mark(self, name: str, t: int | None = None, **data: Any) -> None:
        """Stamp now (or at t); the mark reaches the world with the next flush (marks carry their time)."""
        self.pending.append({"name": name, "t": t if t is not None else time.monotonic_ns(), "data": data or None})

    async def flush(self) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            r = await self.http.post(f"{self.run_url}/marks", json=batch)
            r.raise_for_status()

    async def audit(self, phase: str) -> None:
        snap = audit.snapshot(self.own_tasks)
        if phase == "baseline":
            self.baseline = snap
            await self.mark("audit", phase=phase, threads=len(snap["threads"]), tasks=snap["tasks"])
            return
        await self.mark("audit", phase=phase, **audit.left_since(self.baseline, snap))

    async def _mark_after_yield(self, name: str, t: int, data: dict[str, Any]) -> None:
        """Post a mark after the loop has run what the stop set going (cancellations land first)."""
        for _ in range(3):
            await asyncio.sleep(0)
        await self.mark(name, t=t, **data)
        await self.flush()  # at once: the world holds the anchored event until it sees this

    def own(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self.own_tasks.add(task)
        return task

    async def bounded(self, step: str, coro, seconds: float) -> tuple[bool, BaseException | None]:
        """Run an adapter call with a deadline. Returns (finished_in_time, error)."""
        if step != "stop":  # the stop path flushes with stop_called, after the button is pressed
            await self.flush()
        self.step(step, seconds)
        task = coro if isinstance(coro, asyncio.Task) else self.own(coro)
        try:
            await asyncio.wait_for(asyncio.shield(task), seconds)
            return True, None
        except TimeoutError:
            await self.mark("hung", step=step, seconds=seconds)
            await self.flush()
            return False, None
        except (Exception, asyncio.CancelledError) as e:
            return True, e

    # --- the trial -------------------------------------------------------------------------------

    async def run(self) -> None:
        spec = self.spec
        self.http = httpx.AsyncClient(timeout=30, verify=False)  # loopback http: no CA bundle to load
        self.own_tasks.add(asyncio.current_task())
        stop_signal = asyncio.Event()
        anchor_info: dict[str, Any] = {}
        if self.offset.is_event:
            ready = asyncio.Event()
            self.own(self._listen(stop_signal, ready, anchor_info))
            await asyncio.wait_for(ready.wait(), 10)
        await self.http.get(f"{spec.world_url}/health")  # the harness's own connection exists at baseline
        await self.audit("baseline")
        why = self.adapter_cls.unsupported.get((spec.mode, spec.tool_style))
        if why:
            await self.mark("skipped", reason=f"{spec.mode} with {spec.tool_style} tools: {why}")
            return
        adapter = self.adapter_cls(self._context())
        run_started = time.monotonic_ns()
        await self.mark("run_started", t=run_started)
        in_time, err = await self.bounded("start", adapter.start(), spec.deadlines.start)
        if err is not None or not in_time:
            if err is not None:
                await self.mark("error", step="start", error=_describe(err))
            await self._close(adapter)
            return
        job = self.own(adapter.wait())
        job_end: dict[str, Any] = {}
        job.add_done_callback(lambda t: job_end.setdefault("t", time.monotonic_ns()))

        # --- the stop fires -------------------------------------------------------------------
        await self.enter("trigger", spec.deadlines.trigger)
        if self.offset.is_event:
            trigger = self.own(stop_signal.wait())
        else:
            fire_at = run_started + int(self.offset.at_ms * 1e6)
            trigger = self.own(sleep_until_ns(fire_at))
        done, _ = await asyncio.wait({trigger, job}, timeout=spec.deadlines.trigger,
                                     return_when=asyncio.FIRST_COMPLETED)
        if trigger not in done:
            trigger.cancel()
            if job.done():
                error = await self._job_ended(job, job_end)
                if error:
                    await self.mark("error", step="job", error=f"the job failed before the stop: {error}")
                else:
                    await self.mark("skipped", reason=f"the job ended before the stop offset {spec.offset}")
            else:
                await self.mark("hung", step="trigger", seconds=spec.deadlines.trigger)
            await self._close(adapter)
            return

        t_called = self.t_called = time.monotonic_ns()
        stopping = self.own(adapter.stop())  # pressed first; the mark is posted while it runs
        called_mark = self.own(self._mark_after_yield("stop_called", t_called, anchor_info))
        in_time, err = await self.bounded("stop", stopping, spec.deadlines.stop)
        t_returned = time.monotonic_ns()
        await called_mark
        if not in_time:
            await self._close(adapter)
            return
        await self.mark("stop_returned", t=t_returned, error=_describe(err) if err else None)
        if err is not None:
            await self.mark("error", step="stop", error=_describe(err))

        await self.enter("wait", spec.deadlines.wait)
        try:
            await asyncio.wait_for(asyncio.shield(job), spec.deadlines.wait)
        except TimeoutError:
            await self.mark("hung", step="wait", seconds=spec.deadlines.wait,
                            note="the job did not end after stop returned")
        except (Exception, asyncio.CancelledError):
            pass
        if job.done():
            await self._job_ended(job, job_end)

        # --- settle, audit, resume --------------------------------------------------------------
        await self._saga("saga")
        await self._settle("settle")
        if await self._saga("saga_late"):
            await self._settle("settle_saga")
        await self.audit("after_stop")
        if job.done():
            await self._resume(adapter)
        await self._close(adapter)

    async def run_and_exit(self) -> None:
        """Run the trial, then leave at once: leaked threads must not keep a finished subject alive."""
        await self.run()
        await self.flush()
        os.write(self.watchdog_fd, b'{"step": "done"}\n')
        os._exit(0)

    async def _resume(self, adapter: Adapter) -> None:
        if not self.adapter_cls.has_resume():
            await self.mark("resume_absent")
            return
        await self.mark("resume_started")
        in_time, err = await self.bounded("resume", adapter.resume(), self.spec.deadlines.resume)
        if not in_time:
            return
        if isinstance(err, NoResume):
            await self.mark("resume_absent", reason=str(err))
            return
        await self.mark("resume_returned", error=_describe(err) if err else None)
        await self._settle("settle_resume")
        await self.audit("after_resume")

    async def _close(self, adapter: Adapter) -> None:
        in_time, err = await self.bounded("close", adapter.close(), self.spec.deadlines.close)
        if in_time:
            await self.mark("closed", error=_describe(err) if err else None)
        await _children_settle(self.spec.deadlines.grace / 3)
        await self.audit("after_close")

    async def _saga(self, step: str) -> int:
        """The saga mitigation: compensate, newest first, what committed after the stop and is not yet undone."""
        if not self.saga or self.t_called is None:
            return 0
        committed = {e["effect_id"]: e for e in await self._saga_effects()}
        late = sorted((e for e in committed.values()
                       if e["committed_ns"] > self.t_called and e["effect_id"] not in self.compensated),
                      key=lambda e: e["committed_ns"], reverse=True)
        for entry in late:
            await self.enter(step, self.spec.deadlines.settle)
            await self.toolbox.acompensate(entry["kind"], entry["effect_id"])
            self.compensated.add(entry["effect_id"])
        if late:
            bump_generations(Path(self.spec.workdir), [e["logical"] for e in late])
            await self.mark(step, compensated=[e["effect_id"] for e in late])
        return len(late)

    async def _saga_effects(self) -> list[dict[str, Any]]:
        """Committed effects of the logged calls, asked of the service by each call's key."""
        calls = {entry["key"]: entry for entry in self.saga.entries()}
        found = []
        for key, call in calls.items():
            r = await self.http.get(f"{self.spec.services_base_url}/effects", params={"idempotency_key": key})
            if r.status_code == 404:  # the call never reached the service
                continue
            r.raise_for_status()
            effect = r.json()
            if effect["status"] == "committed":
                found.append({**call, "effect_id": effect["effect_id"], "committed_ns": effect["committed_ns"]})
        return found

    async def _settle(self, step: str) -> None:
        await self.enter(step, self.spec.deadlines.settle)
        r = await self.http.get(f"{self.run_url}/quiet", timeout=self.spec.deadlines.settle + 10, params={
            "window_ms": self.spec.settle_window_ms, "deadline_ms": self.spec.deadlines.settle * 1000})
        await self.mark(step, **r.json())

    async def _job_ended(self, job: asyncio.Task, job_end: dict[str, Any]) -> str | None:
        error = None
        if job.cancelled():
            error = "CancelledError"
        elif job.exception() is not None:
            error = _describe(job.exception())
        await self.mark("job_ended", t=job_end.get("t"), error=error)
        return error

    async def _listen(self, stop_signal: asyncio.Event, ready: asyncio.Event, info: dict[str, Any]) -> None:
        """The control stream: the world pushes `stop` the moment the anchored event happens."""
        url = f"{self.run_url}/control"
        async with httpx.AsyncClient(timeout=None, verify=False) as client, client.stream("GET", url) as r:
            async for line in r.aiter_lines():
                if line.startswith(": open"):
                    ready.set()
                elif line.startswith("data:"):
                    msg = json.loads(line[5:])
                    info["anchor_t"] = msg.get("t")
                    info["received_t"] = time.monotonic_ns()
                    stop_signal.set()
                    return

    def _context(self) -> TrialContext:
        spec = self.spec
        args = ["-m", "harness.tools.mcp_server", "--run-url", spec.services_base_url]
        if spec.mitigation != "none":
            args += ["--mitigation", spec.mitigation, "--workdir", spec.workdir, "--run-id", spec.run_id]
        mcp = McpServer(command=sys.executable, args=tuple(args), env={OWNER_ENV: f"run:{spec.run_id}"})
        return TrialContext(
            run_id=spec.run_id, scenario=self.scenario, model_base_url=spec.model_base_url,
            services_base_url=spec.services_base_url, model_name=spec.model_name, mode=spec.mode,
            tool_style=spec.tool_style, toolbox=self.toolbox, mcp=mcp, workdir=Path(spec.workdir), seed=spec.seed,
        )


async def _children_settle(seconds: float) -> None:
    """Give processes a moment to exit after close() returned (a terminate takes a few ms to land)."""
    import psutil

    deadline = time.monotonic() + seconds
    me = psutil.Process()
    while me.children(recursive=True) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _describe(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    tb = traceback.extract_tb(err.__traceback__)
    if tb:
        last = tb[-1]
        text += f" (at {Path(last.filename).name}:{last.lineno})"
    return text[:500]


def prepare_process(spec: SubjectSpec, environment: dict[str, str]) -> None:
    """Make the process the trial's own: env marker, HOME in the trial folder, egress counting."""
    home = Path(spec.workdir) / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(environment)
    os.environ[OWNER_ENV] = f"run:{spec.run_id}"
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["XDG_DATA_HOME"] = str(home / ".local" / "share")
    os.environ["XDG_CACHE_HOME"] = str(home / ".cache")
    os.chdir(spec.workdir)
    audit.install_egress_counter()


def subject_main(spec: SubjectSpec, adapter_cls: type[Adapter], scenario: Scenario, watchdog_fd: int) -> int:
    """Entry point of a subject (forked or spawned). Returns the exit code."""
    prepare_process(spec, adapter_cls.environment)
    subject = Subject(spec, adapter_cls, scenario, watchdog_fd)
    try:
        asyncio.run(subject.run_and_exit())
    except BaseException as e:  # the row says failed; the parent reads the reason from here
        os.write(watchdog_fd, (json.dumps({"crash": _describe(e)}) + "\n").encode())
    return 3
