"""The adapter's run inside the served app: the server process hosts it as an app hosts its framework's run.

The app's endpoints call these: `start` when the page sends its message, `stop` when the app reacts to the client's
stop (a disconnect it noticed, its cancel endpoint), and the harness's own channel asks `wait`, `resume`, `close`
and `audit` (what the server process holds, as the subject's audit sees its own process). The server's reaction
goes to the world's ledger as marks, stamped when it happens: when it saw the stop (`served_stop_seen`), when the
framework's button returned (`served_stop_returned`), when the run's job ended (`served_run_ended`).
"""

from __future__ import annotations

import asyncio
import time
import traceback
from pathlib import Path
from typing import Any

from harness.contract.adapter import Adapter, NoResume
from harness.scenario import Scenario
from harness.tools.loopback_http import LoopbackClient
from harness.trial import activity, audit
from harness.trial.context import trial_context, trial_toolbox
from harness.trial.marks import MarkBuffer
from harness.trial.spec import SubjectPlan
from harness.vocabulary import Mark

#: coroutines of the serving stack that live as long as the server, whatever the run does: its furniture, not
#: the run's tasks (uvicorn's tick, sse-starlette's shutdown watcher)
SERVER_FURNITURE = frozenset({"Server.serve", "Server._serve", "Server.main_loop", "_shutdown_watcher"})


def connection_inodes(local_port: int, remote_port: int) -> set[str]:
    """The socket inodes of the TCP connection between these ports (the kernel's table of this process's network
    namespace)."""
    found = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/self/net/{table}") as f:
                rows = [line.split() for line in f.read().splitlines()[1:]]
        except OSError:
            continue
        for row in rows:
            if len(row) > 9 and (int(row[1].rsplit(":", 1)[1], 16), int(row[2].rsplit(":", 1)[1], 16)) == (
                    local_port, remote_port):
                found.add(row[9])
    return found


def describe(err: BaseException) -> str:
    """As the subject describes an error (harness/trial/subject.py): its type, message and where it was raised."""
    text = f"{type(err).__name__}: {err}"
    tb = traceback.extract_tb(err.__traceback__)
    if tb:
        text += f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})"
    return text[:500]


class HostedRun:
    """One trial's adapter, hosted by the server process."""

    def __init__(self, plan: SubjectPlan, adapter_cls: type[Adapter], scenario: Scenario, owner_pid: int):
        self.plan = plan
        self.adapter_cls = adapter_cls
        self.scenario = scenario
        self.owner_pid = owner_pid
        self.saga_log, self.toolbox = trial_toolbox(plan)
        self.adapter: Adapter | None = None
        self.job: asyncio.Task | None = None  # the adapter's wait(), once started
        self.stopping: asyncio.Task | None = None  # the framework's button, once pressed
        self.own: set[asyncio.Task] = set()  # the harness's tasks here (the job's watcher, its channel's requests)
        self.baseline: dict[str, Any] = {}
        self.marks: MarkBuffer | None = None

    async def launch(self) -> None:
        """Make the adapter and get it ready, before the run's clock starts (as the subject does)."""
        self.marks = MarkBuffer(LoopbackClient(), self.plan.run.run_url)
        ctx = trial_context(self.plan, self.scenario, self.toolbox, self.owner_pid, lambda t: None)
        self.adapter = self.adapter_cls(ctx)
        await self.adapter.launch()

    def take_baseline(self) -> None:
        """What the server holds before the run (uvicorn's loop, its listening socket): left out of every audit."""
        self.baseline = audit.snapshot(self._furniture())

    async def mark(self, name: str, t: int | None = None, **data: Any) -> None:
        assert self.marks is not None
        self.marks.mark(name, t, **data)
        await self.marks.flush()

    # --- what the app's endpoints call ------------------------------------------------------------

    async def start(self) -> None:
        """The page's message: the framework's run starts; the job is watched until it ends."""
        assert self.adapter is not None
        if self.job is not None:
            raise RuntimeError("this server hosts one run")
        await self.adapter.start()
        self.job = asyncio.get_running_loop().create_task(self._watch(self.adapter))
        self.own.add(self.job)

    async def _watch(self, adapter: Adapter) -> dict[str, Any]:
        try:
            await adapter.wait()
            ended, error = "completed", None
        except asyncio.CancelledError:
            ended, error = "cancelled", None
        except Exception as e:
            ended, error = "failed", describe(e)
        t = time.monotonic_ns()
        await self.mark(Mark.SERVED_RUN_ENDED, t=t, ended=ended, error=error)
        return {"ended": ended, "error": error}

    async def stop(self, how: str) -> None:
        """The app reacts to the client's stop (`how`: disconnect, cancel): the framework's button, pressed once;
        returns when the button returns."""
        assert self.adapter is not None
        if self.stopping is None:
            t = time.monotonic_ns()
            self.adapter.ctx.stop_button.press()
            self.stopping = asyncio.get_running_loop().create_task(self.adapter.stop())
            self.own.add(self.stopping)
            await self.mark(Mark.SERVED_STOP_SEEN, t=t, how=how)
            try:
                await asyncio.shield(self.stopping)
                error = None
            except (Exception, asyncio.CancelledError) as e:
                error = describe(e)
            await self.mark(Mark.SERVED_STOP_RETURNED, error=error)
        await asyncio.wait({self.stopping})

    async def ended(self) -> dict[str, Any]:
        """The job's end, as the harness's `wait` asks it."""
        if self.job is None:
            raise RuntimeError("no run was started")
        return await asyncio.shield(self.job)

    # --- the harness's channel --------------------------------------------------------------------

    async def resume(self) -> dict[str, Any]:
        assert self.adapter is not None
        self.adapter.ctx.stop_button.release()
        try:
            await self.adapter.resume()
        except NoResume as e:
            return {"resumed": False, "reason": str(e)}
        return {"resumed": True}

    async def close(self) -> None:
        if self.adapter is not None:
            await self.adapter.close()

    def _furniture(self) -> set[asyncio.Task]:
        current = asyncio.current_task()
        return {t for t in asyncio.all_tasks() if t is current or t in self.own
                or getattr(t.get_coro(), "__qualname__", "") in SERVER_FURNITURE}

    def audit(self, asking: tuple[int, int]) -> dict[str, Any]:
        """What the server holds now that it did not hold before the run (threads, tasks, sockets, egress), and
        its work still scheduled, by the audit's one rule (harness/trial/activity.py). Its children are the
        subject's descendants: the subject's audit counts them. `asking`: (local port, remote port) of the
        connection the audit is asked on, not counted."""
        own = self._furniture()
        left = audit.left_since(self.baseline, audit.snapshot(own))
        left.pop("children", None)
        mine = connection_inodes(*asking)
        left["sockets"] = [s for s in left["sockets"] if s["inode"] not in mine]
        baseline = {t["ident"] for t in self.baseline["threads"]}
        work = activity.scheduled_work(baseline, own, [])
        return {"left": left, "work": [{"kind": w.kind, "what": w.what, "activity": str(w.activity)} for w in work]}
