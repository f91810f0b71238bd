"""Inside the subject process: one trial's steps, each stamped as a mark in the world's ledger.

baseline audit -> start -> stop at the offset -> wait (bounded) -> settle -> audit -> resume ->
settle -> audit -> close -> audit. Each step has a deadline, told to the parent through the watchdog
pipe, so the parent can end a subject whose loop is stuck. The pieces it uses each have one job:
marks (batching), control (when the stop is due), saga (the mitigation hook), audit (what is alive).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import traceback
from pathlib import Path
from typing import Any

from harness.contract.adapter import Adapter, NoResume, TrialContext
from harness.owner import OWNER_ENV, name_this_process_a_subject, run_marker
from harness.scenario import Scenario
from harness.tools.loopback_http import LoopbackClient
from harness.trial import activity, audit, census, host, priority
from harness.trial.context import trial_context, trial_toolbox
from harness.trial.control import ControlStream, pressed
from harness.trial.marks import MarkBuffer
from harness.trial.saga import Saga
from harness.trial.serve.client import READY_S, ServedAdapter
from harness.trial.serve.paths import serve_path
from harness.trial.spec import SubjectPlan
from harness.trial.watchdog import WatchdogPipe
from harness.vocabulary import AuditPhase, Mark

#: how long the settle step waits before it looks again at a quiet run that still has work scheduled
WORK_POLL_S = 0.02
#: how long the framework's usage accounting may take to answer for the stopped run
USAGE_S = 5.0


class Subject:
    def __init__(self, plan: SubjectPlan, adapter_cls: type[Adapter], scenario: Scenario, watchdog: WatchdogPipe):
        self.plan = plan
        self.spec = plan.spec
        self.deadlines = plan.deadlines
        self.adapter_cls = adapter_cls
        self.scenario = scenario
        self.watchdog = watchdog
        self.own_tasks: set[asyncio.Task] = set()
        self.baseline: dict[str, Any] = {}
        self.t_called: int | None = None
        self.saga_log, self.toolbox = trial_toolbox(plan)
        self.http: LoopbackClient
        self.marks: MarkBuffer
        self.saga: Saga | None = None
        self.adapter: Adapter | ServedAdapter | None = None  # once made: the audits ask what its process holds

    # --- plumbing --------------------------------------------------------------------------------

    async def mark(self, name: str, t: int | None = None, **data: Any) -> None:
        self.marks.mark(name, t, **data)

    async def flush(self) -> None:
        await self.marks.flush()

    async def enter(self, name: str, seconds: float) -> None:
        """Start a step that may overrun: what is marked so far must be in the ledger before it."""
        await self.flush()
        self.watchdog.step(name, seconds)

    async def audit(self, phase: AuditPhase) -> None:
        snap = audit.snapshot(self.own_tasks)
        if phase == AuditPhase.BASELINE:
            self.baseline = snap
            await self.mark(Mark.AUDIT, phase=phase, threads=len(snap["threads"]), tasks=snap["tasks"])
            return
        left = audit.left_since(self.baseline, snap)
        if self.adapter is not None:  # an adapter process in another language: what it holds (harness/trial/host.py)
            left = host.merged(left, await self.adapter.held())
        await self.mark(Mark.AUDIT, phase=phase, **left)

    async def _mark_after_yield(self, name: str, t: int, data: dict[str, Any]) -> None:
        """Post a mark after the loop has run what the stop set going (cancellations land first). A time-offset
        run yields the CPU from here on (harness/trial/priority.py): its stop has been pressed."""
        for _ in range(3):
            await asyncio.sleep(0)
        if not self.spec.offset.is_event:
            priority.to_background()
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
        self.watchdog.step(step, seconds)
        task = coro if isinstance(coro, asyncio.Task) else self.own(coro)
        try:
            await asyncio.wait_for(asyncio.shield(task), seconds)
            return True, None
        except TimeoutError:
            await self.mark(Mark.HUNG, step=step, seconds=seconds)
            await self.flush()
            return False, None
        except (Exception, asyncio.CancelledError) as e:
            return True, e

    # --- the trial -------------------------------------------------------------------------------

    async def run(self) -> None:
        spec, run, deadlines = self.spec, self.plan.run, self.deadlines
        self.http = LoopbackClient()  # a connection per request: none of the harness's stays open
        self.marks = MarkBuffer(self.http, run.run_url)
        if self.saga_log is not None:  # the saga mitigation: its hook, called after the stop
            self.saga = Saga(self.saga_log, run.workdir, self.http, run.services_base_url, self.toolbox)
        self.own_tasks.add(asyncio.current_task())
        if spec.offset.is_event:  # its counts do not depend on load: it yields the CPU to time-offset runs
            priority.to_background()
        control = ControlStream(run.run_url) if spec.offset.is_event else None
        if control is not None:
            self.own(control.listen())
            await asyncio.wait_for(control.ready.wait(), 10)
        await self.audit(AuditPhase.BASELINE)
        why = self.adapter_cls.why_unsupported(spec.mode, spec.tool_style)
        if why:
            await self.mark(Mark.SKIPPED, reason=f"{spec.mode} with {spec.tool_style} tools: {why}")
            return
        self.ctx = self._context()
        adapter = self.adapter = self._adapter()
        # a served trial's server is a fresh process that imports its framework (the subject was forked warm)
        served_s = READY_S if isinstance(adapter, ServedAdapter) else 0.0
        in_time, err = await self.bounded("start", adapter.launch(), deadlines.start + served_s)
        if err is not None or not in_time:  # the app never got ready: the trial fails in its start step
            if err is not None:
                await self.mark(Mark.ERROR, step="start", error=_describe(err))
            await self._close(adapter)
            return
        run_started = time.monotonic_ns()
        served = {"serve_path": spec.serve_path} if isinstance(adapter, ServedAdapter) else {}
        await self.mark(Mark.RUN_STARTED, t=run_started, **served)
        in_time, err = await self.bounded("start", adapter.start(), deadlines.start)
        for pid in adapter.apparatus():  # the harness's own, not the run's: no audit counts them
            audit.harness_own(pid)
        if err is not None or not in_time:
            if err is not None:
                await self.mark(Mark.ERROR, step="start", error=_describe(err))
            await self._close(adapter)
            return
        job = self.own(adapter.wait())
        job_end: dict[str, Any] = {}
        job.add_done_callback(lambda t: job_end.setdefault("t", time.monotonic_ns()))

        # --- the stop fires -------------------------------------------------------------------
        await self.enter("trigger", deadlines.trigger)
        trigger = self.own(pressed(spec.offset, run_started, control))
        done, _ = await asyncio.wait({trigger, job}, timeout=deadlines.trigger,
                                     return_when=asyncio.FIRST_COMPLETED)
        if trigger not in done:
            trigger.cancel()
            if job.done():
                error = await self._job_ended(job, job_end)
                if error:
                    await self.mark(Mark.ERROR, step="job", error=f"the job failed before the stop: {error}")
                else:
                    await self.mark(Mark.SKIPPED, reason=f"the job ended before the stop offset {spec.offset.text}")
            else:
                await self.mark(Mark.HUNG, step="trigger", seconds=deadlines.trigger)
            await self._close(adapter)
            return

        t_called = self.t_called = self.ctx.stop_button.press()  # ordered against sends that ask it
        # told to the parent first, with a plain write: a stop() that blocks the loop never lets the mark post
        self.watchdog.stop_called(t_called, control.anchor if control else {})
        stopping = self.own(adapter.stop())  # pressed first; the mark is posted while it runs
        counting = self.own(census.census(t_called, self._post_census)) if self.adapter_cls.census else None
        called = {**(control.anchor if control else {}),
                  **({"hold_until_handled": True} if adapter.notifies_stop_handled else {})}
        called_mark = self.own(self._mark_after_yield(Mark.STOP_CALLED, t_called, called))
        in_time, err = await self.bounded("stop", stopping, deadlines.stop)
        t_returned = time.monotonic_ns()
        await called_mark
        if not in_time:
            await self._close(adapter)
            return
        await self.mark(Mark.STOP_RETURNED, t=t_returned, error=_describe(err) if err else None)
        if err is not None:
            await self.mark(Mark.ERROR, step="stop", error=_describe(err))

        await self.enter("wait", deadlines.wait)
        try:
            await asyncio.wait_for(asyncio.shield(job), deadlines.wait)
        except TimeoutError:
            await self.mark(Mark.HUNG, step="wait", seconds=deadlines.wait,
                            note="the job did not end after stop returned")
        except (Exception, asyncio.CancelledError):
            pass
        if job.done():
            await self._job_ended(job, job_end)

        # --- settle, audit, resume --------------------------------------------------------------
        await self._saga(Mark.SAGA)
        await self._settle(Mark.SETTLE, since_ns=t_called)
        if counting is not None:  # its last count fell inside the observation (census_floor_ms): done by now
            await counting
        if await self._saga(Mark.SAGA_LATE):
            await self._settle(Mark.SETTLE_SAGA, since_ns=t_called)
        await self.audit(AuditPhase.AFTER_STOP)
        await self._reported_usage(adapter)
        if spec.host == "crash":  # the app dies here without cleanup: no resume, no close()
            await self.enter(Mark.HOST_CRASH, self.deadlines.close)
            await asyncio.sleep(self.deadlines.close)  # the parent SIGKILLs this process meanwhile
            return
        if job.done():
            await self._resume(adapter)
        await self._close(adapter)

    async def run_and_exit(self) -> None:
        """Run the trial, say so, then wait for the parent to end this process and its descendants
        (leaked threads must not keep a finished subject alive, and nothing of it may outlive it)."""
        await self.run()
        await self.flush()
        self.watchdog.done()
        _wait_for_parent()

    async def _resume(self, adapter: Adapter | ServedAdapter) -> None:
        if not self.adapter_cls.has_resume():
            await self.mark(Mark.RESUME_ABSENT)
            return
        self.ctx.stop_button.release()
        await self.mark(Mark.RESUME_STARTED)
        in_time, err = await self.bounded("resume", adapter.resume(), self.deadlines.resume)
        if not in_time:
            return
        if isinstance(err, NoResume):
            await self.mark(Mark.RESUME_ABSENT, reason=str(err))
            return
        t_returned = time.monotonic_ns()
        await self.mark(Mark.RESUME_RETURNED, t=t_returned, error=_describe(err) if err else None)
        await self._settle(Mark.SETTLE_RESUME, since_ns=t_returned)
        await self.audit(AuditPhase.AFTER_RESUME)

    async def _reported_usage(self, adapter: Adapter) -> None:
        """Ask the framework's usage for the stopped run (bounded: a framework that cannot say is None)."""
        try:
            tokens = await asyncio.wait_for(adapter.reported_usage(), USAGE_S)
        except (Exception, TimeoutError) as e:
            await self.mark(Mark.USAGE_REPORTED, output_tokens=None, error=_describe(e))
            return
        if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0):
            await self.mark(Mark.USAGE_REPORTED, output_tokens=None, error=f"not a token count: {tokens!r}")
            return
        await self.mark(Mark.USAGE_REPORTED, output_tokens=tokens)

    async def _close(self, adapter: Adapter | ServedAdapter) -> None:
        in_time, err = await self.bounded("close", adapter.close(), self.deadlines.close)
        if in_time:
            await self.mark(Mark.CLOSED, error=_describe(err) if err else None)
        await _children_settle(self.deadlines.grace / 3)
        await self.audit(AuditPhase.AFTER_CLOSE)

    async def _post_census(self, after_s: float, t: int, processes: list[dict[str, Any]]) -> None:
        await self.mark(Mark.CENSUS, t=t, after_s=after_s, processes=processes)

    def _observe_ms(self, step: str) -> float:
        """The observation floor of a settle step: the plan's, and after the stop at least the census's."""
        if step == Mark.SETTLE and self.adapter_cls.census:
            return max(self.plan.observe_ms, census.census_floor_ms())
        return self.plan.observe_ms

    async def _saga(self, step: str) -> int:
        """The saga mitigation's hook: compensate what committed after the stop and is not yet undone."""
        if self.saga is None or self.t_called is None:
            return 0
        late = await self.saga.late_effects(self.t_called)
        for effect in late:
            await self.enter(step, self.deadlines.settle)
            await self.saga.compensate(effect)
        if late:
            self.saga.forget(late)
            await self.mark(step, compensated=[e["effect_id"] for e in late])
        return len(late)

    async def _settle(self, step: str, since_ns: int) -> None:
        """Observe until the run is over: the world quiet for the settle window AND nothing of the run still
        scheduled in the subject (a sleeping thread, a task's back-off timer, a running child: activity.py), and
        at least the observation floor after `since_ns` (the stop, or resume returning). Still not over at the
        deadline = a runaway: the mark says `quiet: false`, what was still scheduled, and the deadline, where
        the row's counts are cut (harness/results/metrics.py)."""
        floor_ms = max(0.0, (since_ns + self._observe_ms(step) * 1e6 - time.monotonic_ns()) / 1e6)
        seconds = self.deadlines.settle + floor_ms / 1000
        await self.enter(step, seconds + WORK_POLL_S)
        deadline_at = time.monotonic_ns() + int(seconds * 1e9)
        baseline = {t["ident"] for t in self.baseline["threads"]}
        floor_left, quiet_since = floor_ms, None
        seen: dict[tuple[str, str], activity.Work] = {}  # what was scheduled, by thread, task or child
        while True:
            left_ms = max(0.0, (deadline_at - time.monotonic_ns()) / 1e6 - floor_left)
            r = (await self.http.get(f"{self.plan.run.run_url}/quiet", timeout=seconds + 10, params={
                "window_ms": self.plan.settle_window_ms, "deadline_ms": round(left_ms, 3),
                "floor_ms": round(floor_left, 3)})).json()
            # the deadline may cut the last window short: nothing since the last quiet answer is still quiet
            world_quiet = r["quiet"] or (r.get("open_requests") == 0 and r["last_activity_ns"] == quiet_since)
            work = activity.scheduled_work(baseline, self.own_tasks, audit.descendant_pids())
            if self.adapter is not None:
                work += host.work(await self.adapter.held())
            if world_quiet:  # only then is the work what keeps the run from being over
                seen.update({(w.kind, w.what): w for w in work})
            if not world_quiet or not work or time.monotonic_ns() >= deadline_at:
                break
            floor_left, quiet_since = 0.0, r["last_activity_ns"]  # quiet, but work is due: look again soon
            await asyncio.sleep(WORK_POLL_S)
        over = world_quiet and not work
        # a runaway names the work it saw scheduled while the world was quiet (a poster may be mid-post at the
        # deadline, not asleep)
        await self.mark(step, **{**r, "quiet": over, "world_quiet": world_quiet,
                                 "scheduled": [] if over else [str(w) for w in seen.values()],
                                 "deadline_at": deadline_at,
                                 "floor_ms": round(floor_ms, 3), "deadline_s": self.deadlines.settle})

    async def _job_ended(self, job: asyncio.Task, job_end: dict[str, Any]) -> str | None:
        error = None
        if job.cancelled():
            error = "CancelledError"
        elif job.exception() is not None:
            error = _describe(job.exception())
        status = self.adapter.exit_status() if self.adapter is not None else None
        await self.mark(Mark.JOB_ENDED, t=job_end.get("t"), error=error,
                        **({"exit_status": status} if status is not None else {}))
        return error

    def _adapter(self) -> Adapter | ServedAdapter:
        """The adapter in this process, or (a served trial) the client of a server that hosts it."""
        path = serve_path(self.spec.serve_path)
        if path is None:
            return self.adapter_cls(self.ctx)
        return ServedAdapter(self.ctx, self.plan, self.scenario, path, self.adapter_cls, self.own)

    def _context(self) -> TrialContext:
        return trial_context(self.plan, self.scenario, self.toolbox, os.getppid(), self._stop_handled)

    def _stop_handled(self, t: int) -> None:
        """An adapter process handled the stop at `t`: the world hears it at once (it holds the anchor until then)."""
        async def post() -> None:
            await self.mark(Mark.STOP_HANDLED, t=t)
            await self.flush()

        self.own(post())


async def _children_settle(seconds: float) -> None:
    """Give processes a moment to exit after close() returned (a terminate takes a few ms to land)."""
    deadline = time.monotonic() + seconds
    while audit.descendant_pids() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _wait_for_parent(limit_s: float = 120.0) -> None:
    """Block until the parent ends this process (it reaps the descendants first); leave on our own only
    if it never does (a parent that is not a stopbench runner)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
    os._exit(0)


def _become_subreaper() -> None:
    """Orphans of this subject's descendants (a double fork, a launcher that exits) are re-parented to the
    subject instead of init (PR_SET_CHILD_SUBREAPER), so they stay findable by walking its tree, whatever
    their environment, process group or session."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER = 36
    except (OSError, AttributeError):  # not Linux: the owner marker and process group remain
        pass


def _describe(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    tb = traceback.extract_tb(err.__traceback__)
    if tb:
        last = tb[-1]
        text += f" (at {Path(last.filename).name}:{last.lineno})"
    return text[:500]


#: the signals a shell leaves at their defaults in a program it starts. One ignored where the bench was launched
#: (under nohup, or as a background job of a script) stays ignored across every exec below it, and a CLI's SIGHUP
#: or SIGINT would reach nobody: the subject hands its processes a terminal's dispositions
JOB_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


def _default_signals() -> None:
    for sig in JOB_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


def prepare_process(plan: SubjectPlan, environment: dict[str, str]) -> None:
    """Make the process the trial's own: a terminal's signal dispositions, env marker, HOME in the trial folder,
    egress counting."""
    _default_signals()
    _become_subreaper()
    name_this_process_a_subject()
    workdir = plan.run.workdir
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(environment)
    os.environ[OWNER_ENV] = run_marker(plan.run.run_id, os.getppid())
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["XDG_DATA_HOME"] = str(home / ".local" / "share")
    os.environ["XDG_CACHE_HOME"] = str(home / ".cache")
    os.chdir(workdir)
    audit.install_egress_counter()


def subject_main(plan: SubjectPlan, adapter_cls: type[Adapter], scenario: Scenario, watchdog_fd: int) -> int:
    """Entry point of a subject (forked or spawned). Returns the exit code."""
    prepare_process(plan, adapter_cls.environment)
    watchdog = WatchdogPipe(watchdog_fd, plan.deadlines.grace)
    subject = Subject(plan, adapter_cls, scenario, watchdog)
    try:
        asyncio.run(subject.run_and_exit())
    except BaseException as e:  # the row says failed; the parent reads the reason from here
        watchdog.crash(_describe(e))
    return 3
