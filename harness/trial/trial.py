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
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import python_module
from harness.contract.adapter import Adapter
from harness.contract.protocol import STDERR_FILE
from harness.owner import OWNER_ENV, run_marker
from harness.providers import PROVIDERS
from harness.results import metrics
from harness.scenario import Scenario
from harness.trial.audit import descendant_pids
from harness.trial.concurrency import Slot
from harness.trial.reap import HostCrash, reap_run, run_processes, start_ticks
from harness.trial.spec import Deadlines, RunInfo, SubjectPlan, TrialSpec
from harness.trial.subject import subject_main
from harness.trial.watchdog import WatchdogReader
from harness.trial.world_client import WorldClient
from harness.vocabulary import Event, Mark

#: the subject's steps that only observe the world (harness/trial/subject.py `_settle`)
STEPS_OBSERVING = frozenset({Mark.SETTLE, Mark.SETTLE_SAGA, Mark.SETTLE_RESUME})


def settle_window_ms(scenario: Scenario) -> float:
    """How long nothing may happen before the run counts as settled.

    A request in progress keeps the run from being quiet on its own (the world counts open requests),
    so the window only has to cover the gap between one action of an agent that runs on and its next
    (a tool result and the next model call, a response and the next tool call): the slowest service
    or first token, plus 100 ms for the framework's own bookkeeping. A framework slower than that between
    its steps shows it before the stop: the world stretches the window to 1.5 x the run's longest pause
    (harness/world/app.py `quiet`).
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


#: the subject's temporary folder, in its trial folder (TMPDIR for the subject and every process it starts)
TEMP_FOLDER = "tmp"
#: where the subject and the processes it starts print (its stdout and stderr), in its trial folder; kept with the
#: trial's evidence, with the adapter process's stderr (harness/contract/protocol.py), off the terminal
OUTPUT_FILE = "subject-output.log"
PRINTED_FILES = (OUTPUT_FILE, STDERR_FILE)
#: the most of each that is kept (its end: where a failure says why)
OUTPUT_KEPT_BYTES = 256 * 1024


def print_into(path: Path) -> None:
    """This process's stdout and stderr (and so its children's) into `path`."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def read_printed(workdir: Path) -> dict[str, str]:
    """What the trial's processes printed, by file (the end of each, if long); files with nothing left out."""
    out = {}
    for name in PRINTED_FILES:
        try:
            with (workdir / name).open("rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - OUTPUT_KEPT_BYTES))
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        if text:
            out[name] = (f"[{size - OUTPUT_KEPT_BYTES} bytes before this left out]\n" if size > OUTPUT_KEPT_BYTES
                         else "") + text
    return out


def use_temp_folder(folder: Path) -> None:
    """This process's and its children's temporary folder (tempfile caches it: a forked subject resets it)."""
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)


def _die_with_parent(parent: int) -> None:
    """A subject whose runner is killed outright (SIGKILL, a CI timeout) gets SIGKILL from the kernel
    (PR_SET_PDEATHSIG): nothing else would end it, and its MCP servers end with their stdin."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the watchdog and `stopbench reap` remain
        return
    if os.getppid() != parent:  # the runner died before the line above
        os._exit(3)


class RunningTrial:
    """A subject in flight. `poll()` until it returns True, then `finish()` for the row."""

    def __init__(self, spec: TrialSpec, scenario: Scenario, adapter_cls: type[Adapter], world: WorldClient,
                 workroot: Path, deadlines: Deadlines, start_method: str = "fork",
                 settle_ms: float | None = None, observe_ms: float | None = None):
        self.spec = spec
        self.scenario = scenario
        self.world = world
        self.deadlines = deadlines
        self.started = time.monotonic()
        self.killed_step: str | None = None
        self.exit_code: int | None = None
        self.cpu_s: float | None = None  # the subject's and its waited-for children's, from the kernel
        self.descendants: dict[int, int] = {}  # pid -> start ticks, listed while the subject was frozen
        self.events: list[dict[str, Any]] = []  # the ledger behind the row, once finish() read it
        self.crash: HostCrash | None = None  # a host crash trial, once its host was killed
        created = world.create_run(scenario.name, seed=spec.seed,
                                   stop_anchor=spec.offset if spec.offset.is_event else None,
                                   billing=spec.billing or None)
        self.run_id = created["run_id"]
        workdir = workroot / f"{self.run_id}"
        workdir.mkdir(parents=True, exist_ok=True)
        temp = workdir / TEMP_FOLDER  # the subject's temporary folder: what a framework leaves there goes with it
        temp.mkdir()
        self.workdir = workdir
        self.output: dict[str, str] = {}  # what the trial's processes printed, once finish() read it
        printed = workdir / OUTPUT_FILE
        self.plan = SubjectPlan(
            spec=spec,
            run=RunInfo(world_url=world.url, run_id=self.run_id,
                        model_base_url=created[PROVIDERS[spec.provider].base_url_key],
                        services_base_url=created["services_base_url"], workdir=workdir),
            settle_window_ms=settle_window_ms(scenario) if settle_ms is None else settle_ms, deadlines=deadlines,
            observe_ms=scenario.observe_ms if observe_ms is None else observe_ms,
        )
        read_fd, write_fd = os.pipe()
        self.proc: subprocess.Popen | None = None
        if start_method == "fork":
            gc.freeze()  # keep the collector from touching (and so copying) the parent's pages in the child
            parent = os.getpid()
            self.pid = os.fork()
            if self.pid == 0:  # the subject
                code = 3
                try:
                    os.close(read_fd)
                    _die_with_parent(parent)
                    os.setpgid(0, 0)
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    use_temp_folder(temp)
                    print_into(printed)
                    code = subject_main(self.plan, adapter_cls, scenario, write_fd)
                finally:
                    os._exit(code)
        else:
            with printed.open("ab") as into:
                self.proc = subprocess.Popen(
                    [*python_module("trial.spawned"), self.plan.to_json(), str(write_fd),
                     json.dumps(scenario.raw)],
                    pass_fds=[write_fd], start_new_session=True, stdout=into, stderr=into,
                    env={**os.environ, OWNER_ENV: run_marker(self.run_id, os.getpid()), "TMPDIR": str(temp)},
                )
            self.pid = self.proc.pid
        os.close(write_fd)
        self.subject_start = start_ticks(self.pid)  # anything of the run started after this
        self.watchdog = WatchdogReader(read_fd)
        self.read_fd = read_fd

    @property
    def observing(self) -> bool:
        """In an observation step (waiting for quiet after the floor, or watching what outlived a crashed
        host): it only waits, so the runner may start another trial beside it."""
        return self.watchdog.last_step in STEPS_OBSERVING or self.crash is not None

    @property
    def slot(self) -> Slot:
        """For the runner's choice of what starts next (harness/trial/concurrency.py)."""
        before_stop = self.watchdog.stop_called is None and not self.watchdog.done and self.exit_code is None
        return Slot(observing=self.observing, timed_before_stop=not self.spec.offset.is_event and before_stop)

    def poll(self) -> bool:
        """True once the subject is done (it said so and waits to be ended), gone, or ended by the watchdog."""
        self.watchdog.read()
        if self.crash is not None:
            return self.crash.over()
        if self.watchdog.last_step == Mark.HOST_CRASH and self.exit_code is None:
            self._crash_host()
            return False
        if self.watchdog.done or self._reaped_exit():
            return True
        if self.watchdog.overran():
            self.killed_step = self.watchdog.last_step
            self.kill()
            return True
        return False

    def _freeze(self) -> None:
        """Stop the subject where it is (SIGSTOP: no thread of it runs on, nothing new is started) and list
        its live descendants while it still holds them: as their subreaper it also holds every orphan of
        theirs, so a process that double-forked away is among them."""
        if self.exit_code is not None:
            return
        try:
            os.kill(self.pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        for pid in descendant_pids(self.pid):
            self.descendants.setdefault(pid, start_ticks(pid))

    def _crash_host(self) -> None:
        """The host crash: SIGKILL the subject where it stands (no close(), no atexit, as an OOM kill), then
        watch what of the run outlives it for the observation window, longer while it is still at work (HostCrash)."""
        self._freeze()  # its descendants listed while it still holds them
        t = time.monotonic_ns()
        self._end_subject()
        events = self.world.ledger(self.run_id)["events"]
        found = run_processes(self.run_id, events, self.pid, self.subject_start, self.descendants)
        self.crash = HostCrash(t, found, self.plan.observe_ms, self.deadlines.settle)

    def _end_subject(self) -> None:
        """SIGKILL the subject and wait for it (its CPU time comes with the wait)."""
        if self.exit_code is not None:  # already waited for: its pid may be another process's by now
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc is not None:
            self.exit_code = self.proc.wait()
            return
        try:
            _, status, usage = os.wait4(self.pid, 0)
            self.exit_code = os.waitstatus_to_exitcode(status)
            self.cpu_s = round(usage.ru_utime + usage.ru_stime, 4)
        except ChildProcessError:
            pass

    def _reaped_exit(self) -> bool:
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return False
            self.exit_code = code
            return True
        pid, status, usage = os.wait4(self.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.exit_code = os.waitstatus_to_exitcode(status)
        self.cpu_s = round(usage.ru_utime + usage.ru_stime, 4)
        return True

    def kill(self) -> None:
        """End the subject and everything in its process group (what the trial could not close); its
        descendants elsewhere (escaped to another group or session) are listed first and reaped by finish()."""
        self._freeze()
        if self.exit_code is None:  # not yet waited for: its group is still its own
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._end_subject()

    def finish(self) -> dict[str, Any]:
        """After the subject is gone: reap leftovers, read the ledger, compute the row."""
        self.watchdog.read()
        self.watchdog.close()
        self._freeze()
        if self.killed_step or not self.watchdog.done:  # ended, or died, before it could post all its marks
            self._stop_called_from_here()
        if self.crash is not None:
            self.world.mark(self.run_id, Mark.HOST_CRASHED, t=self.crash.t, data=self.crash.survivors())
        if self.killed_step:
            self.world.mark(self.run_id, Mark.WATCHDOG_KILLED, data={"step": self.killed_step})
            # what was already in flight still lands: let it, so the row counts it
            self.world.quiet(self.run_id, self.plan.settle_window_ms, self.deadlines.settle * 1000)
        events = self.world.ledger(self.run_id)["events"]
        reaped = reap_run(self.run_id, events, self.pid, self.subject_start, self.descendants)
        self._end_subject()
        data = {"processes": reaped}
        t = self.world.mark(self.run_id, Mark.REAPED, data=data)
        events.append({"t": t, "event": Event.MARK, "name": Mark.REAPED, "data": data})  # as the world recorded it
        self.events = events  # the evidence behind the row (harness.results.evidence)
        self.output = read_printed(self.workdir)
        row = metrics.compute(events, self.scenario, self.spec.offset)
        # a subject that said it was done was then ended by us (SIGKILL): that is not its exit status
        exit_code = 0 if (self.watchdog.done or self.crash) and not self.killed_step else self.exit_code
        outcome = metrics.status(events, exit_code, self.watchdog.crash, self.killed_step)
        self.world.delete_run(self.run_id)  # the row has what it needs: keep the world's memory flat
        row.update(outcome._asdict(), run_id=self.run_id, observe_ms=self.plan.observe_ms,
                   duration_s=round(time.monotonic() - self.started, 3), subject_cpu_s=self.cpu_s)
        return row

    def _stop_called_from_here(self) -> None:
        """A subject ended (or dead) while its stop() blocked the loop never posted `stop_called`; it wrote the
        moment to the watchdog pipe before calling stop(), so post it from here: the row's after-stop counts exist."""
        called = self.watchdog.stop_called
        if called is None:
            return
        events = self.world.ledger(self.run_id)["events"]
        if any(e["event"] == Event.MARK and e.get("name") == Mark.STOP_CALLED for e in events):
            return
        self.world.mark(self.run_id, Mark.STOP_CALLED, t=called["t"], data={**called["data"], "posted_by": "parent"})

    def finish_quietly(self) -> None:
        """On interrupt: no row (the trial reruns next time), but nothing of it left running."""
        self.watchdog.close()
        self._freeze()
        try:
            events = self.world.ledger(self.run_id)["events"]
        except Exception:  # the world may be going down with the same Ctrl-C
            events = []
        reap_run(self.run_id, events, self.pid, self.subject_start, self.descendants)
        self._end_subject()
