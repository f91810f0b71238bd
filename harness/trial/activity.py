"""Idle or scheduled: what each thread, asyncio task and child process of a run is doing, decided once.

A trial is over only when the world has been quiet for its window AND the run holds no scheduled work
(harness/trial/subject.py `_settle`). Quiet alone is not enough: a thread asleep in `time.sleep`, a task
waiting out a retry back-off, a `threading.Timer` shows the world nothing until it fires.

Each kind is decided from what the process itself can see, never from what a framework says:

- a **thread** by the kernel (`/proc/self/task/<tid>/stat` and `.../syscall`: on a CPU, asleep in
  `clock_nanosleep`, or blocked in a wait *with* a timeout, such as a futex with a deadline, or
  `epoll_wait`/`poll`/`select` with one) and by its Python stack (an executor's worker parked in its queue,
  an event loop parked in its selector);
- an **asyncio task** of the subject's loop by the loop's own queues: a handle ready to run that steps the
  task, or a pending timer (`loop._scheduled`) whose callback wakes it (asyncio.sleep, wait_for, timeout,
  AnyIO's cancel scopes); a timer that wakes no task the harness owns counts for the run, but an idle
  connection pool's own clean-up timer (`POOL_TIMERS`: it only closes the pool's idle connections);
- a **child process** by the kernel: one of its threads on a CPU;
- what an **adapter process in another language** holds (its answer to the protocol's `audit`: pending timers,
  immediates, runtime requests, sockets, children, worker threads) by its kind (`HELD`).

Idle (does not hold a trial open): an executor's worker parked in its queue and an event loop parked in its
selector with nothing scheduled (both are `FURNITURE`, counted as `idle_pool_threads`), and anything blocked
with no timeout: a thread on a lock or an Event nobody sets, a task parked on a Future (`PARKED`, still
counted as left behind). Limits: a wait with a timeout cannot be told from one that will do nothing when it
times out (a poller that checks a flag and waits again); it counts as scheduled, so such a thread holds a
trial open until its deadline. In another process only a thread on a CPU is seen as work: a child that sleeps
or waits is counted as left behind, not as work due. Where the kernel's syscall view is missing (another
architecture, no /proc), a sleeping thread looks parked.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Activity(StrEnum):
    """What one thread, task or child process is doing, as the audit decides it."""

    RUNNING = "running"  # on a CPU, or runnable (waiting for it or for the GIL)
    SLEEPING = "sleeping"  # time.sleep / nanosleep: it will act when it wakes
    TIMED_WAIT = "timed_wait"  # blocked with a deadline: a threading.Timer, Event.wait(t), a loop with timers
    TIMER = "timer"  # an asyncio task with a pending timer (a sleep, a back-off, a timeout)
    READY = "ready"  # an asyncio task with a step ready to run
    IDLE_WORKER = "idle_worker"  # an executor's worker parked in its queue, waiting for work
    IDLE_LOOP = "idle_loop"  # an event loop parked in its selector with nothing scheduled
    PARKED = "parked"  # blocked with no deadline: a lock, an Event or a Future nobody may ever set, a read


#: activities that hold a trial open: the run still has work that will act
SCHEDULED = frozenset({Activity.RUNNING, Activity.SLEEPING, Activity.TIMED_WAIT, Activity.TIMER, Activity.READY})
#: idle threads a process keeps for whatever comes next (pools, event loops): counted apart from left-behind work
FURNITURE = frozenset({Activity.IDLE_WORKER, Activity.IDLE_LOOP})


@dataclass(frozen=True)
class Work:
    """One thread, task or child and what it is doing; `what` names it for a runaway's reason."""

    kind: str  # thread | task | child
    what: str
    activity: Activity

    def __str__(self) -> str:
        return f"{self.kind} {self.what} {self.activity.value.replace('_', ' ')}"


# --- threads ---------------------------------------------------------------------------------------------

#: executors' worker loops: (file, function) of the frame that parks a reusable worker on its queue
POOL_LOOPS = (
    (os.path.join("concurrent", "futures", "thread.py"), "_worker"),  # ThreadPoolExecutor (asyncio.to_thread)
    (os.path.join("anyio", "_backends", "_asyncio.py"), "run"),  # AnyIO's WorkerThread (anyio.to_thread)
    # an aiosqlite connection's worker, waiting for its next statement (an app's open database, not work)
    (os.path.join("aiosqlite", "core.py"), "_connection_worker_thread"),
)
_IDLE_FILES = ("threading.py", "queue.py", *(f for f, _ in POOL_LOOPS))
#: the frame an event loop parks in while it waits for I/O (asyncio's selector)
_SELECTOR_FILE = "selectors.py"

#: per architecture: syscall numbers that sleep, and blocking syscalls -> the argument that holds their timeout
#: ("int": a timeout in ms, negative = none; "ptr": a pointer to a timeout, 0 = none)
_SYSCALLS: dict[str, tuple[frozenset[int], dict[int, tuple[int, str]]]] = {
    "x86_64": (frozenset({35, 230}),  # nanosleep, clock_nanosleep
               {202: (3, "ptr"),  # futex
                232: (3, "int"), 281: (3, "int"), 441: (3, "ptr"),  # epoll_wait, epoll_pwait, epoll_pwait2
                7: (2, "int"), 271: (2, "ptr"),  # poll, ppoll
                23: (4, "ptr"), 270: (4, "ptr")}),  # select, pselect6
    "aarch64": (frozenset({101, 115}),
                {98: (3, "ptr"), 22: (3, "int"), 441: (3, "ptr"), 73: (2, "ptr"), 72: (4, "ptr")}),
}
_SLEEPS, _TIMED = _SYSCALLS.get(platform.machine(), (frozenset(), {}))


def _kernel_view(pid: int | str, tid: int) -> Activity | None:
    """What the kernel says a thread is doing: running, sleeping, in a wait with a deadline, or None (blocked
    with no deadline, or unknown)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if state == "R":
            return Activity.RUNNING
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            fields = f.read().split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] == "running":
        return Activity.RUNNING if fields else None
    try:
        nr = int(fields[0])
    except ValueError:
        return None
    if nr in _SLEEPS:
        return Activity.SLEEPING
    if nr in _TIMED:
        index, form = _TIMED[nr]
        raw = int(fields[1 + index], 16)
        if form == "ptr":
            return Activity.TIMED_WAIT if raw else None
        timeout = raw & 0xFFFFFFFF  # an int in a 64-bit register
        return Activity.TIMED_WAIT if timeout < 0x80000000 else None
    return None


def _stack_codes(ident: int) -> list[Any]:
    frame = sys._current_frames().get(ident)
    codes = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    return codes


def _idle_pool_worker(codes: list[Any]) -> bool:
    """Parked in an executor's queue: an executor's worker loop (POOL_LOOPS) waiting in the queue, and nothing
    else on its stack. A `threading.Timer` (a thread waiting in threading.py alone) is not one."""
    in_pool_worker = False
    for code in codes:
        if not code.co_filename.endswith(_IDLE_FILES):
            return False
        in_pool_worker |= any(code.co_filename.endswith(f) and code.co_name == name for f, name in POOL_LOOPS)
    return in_pool_worker


def thread_activity(thread: threading.Thread) -> Activity:
    """The one definition of an idle thread: an executor's worker parked in its queue, an event loop in its
    selector with nothing scheduled, or one blocked with no deadline; anything else is scheduled work."""
    codes = _stack_codes(thread.ident or 0)
    if codes and _idle_pool_worker(codes):
        return Activity.IDLE_WORKER
    kernel = _kernel_view("self", thread.native_id or 0)
    if kernel is not None:
        return kernel
    if codes and codes[0].co_filename.endswith(_SELECTOR_FILE):
        return Activity.IDLE_LOOP
    return Activity.PARKED


# --- asyncio tasks ---------------------------------------------------------------------------------------

def _task_of(callback: Any, args: tuple[Any, ...]) -> asyncio.Task | None:
    """The task a loop handle steps or wakes: a bound method of the task (its step, its wakeup), of an object
    that holds it (asyncio.Timeout `_task`, AnyIO's CancelScope `_host_task`), or a future whose done-callbacks
    wake it (asyncio.sleep, wait_for)."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        return owner
    for name in ("_task", "_host_task"):
        held = getattr(owner, name, None)
        if isinstance(held, asyncio.Task):
            return held
    for arg in args:
        if isinstance(arg, asyncio.Task):
            return arg
        if isinstance(arg, asyncio.Future):
            for cb, _ in arg._callbacks or ():
                woken = getattr(getattr(cb, "func", cb), "__self__", None)
                if isinstance(woken, asyncio.Task):
                    return woken
    return None


#: timers a client's idle connection pool keeps only to close its idle connections once their keep-alive ends: the
#: pool's furniture, as an idle worker is, not work of the run (a run's own timer is). By the function the loop calls
#: and the pool method it calls back: aiohttp's connector schedules `_cleanup` keepalive_timeout after a connection
#: is released (15 s by default) and `_cleanup_closed`, both through aiohttp.helpers.weakref_handle.
POOL_TIMERS: dict[str, frozenset[str]] = {"aiohttp.helpers._weakref_handle": frozenset({"_cleanup", "_cleanup_closed"})}


def _pool_timer(callback: Any, args: tuple) -> bool:
    """Whether a timer is one of POOL_TIMERS: the declared function, calling back one of its pool's methods."""
    methods = POOL_TIMERS.get(f"{getattr(callback, '__module__', '')}.{getattr(callback, '__qualname__', '')}")
    if not methods or len(args) != 1 or not isinstance(args[0], tuple) or len(args[0]) != 2:
        return False
    return args[0][1] in methods


def _handle_name(callback: Any) -> str:
    return getattr(callback, "__qualname__", None) or type(callback).__name__


def task_work(own: set[asyncio.Task]) -> list[Work]:
    """The run's asyncio tasks on this loop (not the harness's `own`) that have a step ready or a timer
    pending, and timers that wake no task of the harness (a bare `call_later` of the run), but an idle connection
    pool's own (POOL_TIMERS)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return []
    found: dict[str, Work] = {}
    queues = ((Activity.READY, getattr(loop, "_ready", ())), (Activity.TIMER, getattr(loop, "_scheduled", ())))
    for activity, handles in queues:
        for handle in list(handles):
            if handle.cancelled():
                continue
            callback, args = handle._callback, handle._args
            if _pool_timer(callback, args):
                continue
            task = _task_of(callback, args)
            if task is not None and (task in own or task.done()):
                continue
            what = repr(task.get_name()) if task is not None else f"callback {_handle_name(callback)}"
            found.setdefault(what, Work("task", what, activity))
    return list(found.values())


# --- child processes -------------------------------------------------------------------------------------

def child_activity(pid: int) -> Activity:
    """A child process is at work while one of its threads is on a CPU. One that sleeps or waits is not told
    from a server waiting for its next request (an MCP server, an escaped process): it is counted as left
    behind (`children_left`, `orphans`), and its next step is the slow-step rule's (harness/world/app.py)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return Activity.PARKED
    running = any(_kernel_view(pid, tid) == Activity.RUNNING for tid in tids)
    return Activity.RUNNING if running else Activity.PARKED


# --- what an adapter process in another language holds ---------------------------------------------------

#: what an adapter process says it holds (docs/adapter-protocol.md, `audit`), by kind: the same rule as above. A
#: pending timer (also one that keeps no process alive) will act, as a task's timer does; an immediate is a step
#: ready to run; a request of the runtime (a file read, a DNS lookup) is on a worker at work. A socket, a child
#: process or a worker thread is not work by itself: what a child or a thread does on a CPU is seen by the kernel
#: (the adapter process is a child of the subject: `child_activity`), what a socket carries by the world.
HELD = {"timer": Activity.TIMER, "immediate": Activity.READY, "request": Activity.RUNNING,
        "socket": Activity.PARKED, "child": Activity.PARKED, "worker": Activity.PARKED, "other": Activity.PARKED}
#: held kinds counted as the run's tasks (`tasks_left`) and threads (`threads_left`)
HELD_TASKS = frozenset({"timer", "immediate", "request"})
HELD_THREADS = frozenset({"worker"})


def held_work(held: list[dict[str, str]]) -> list[Work]:
    """The scheduled work among what an adapter process holds."""
    return [Work("task", f"{item['kind']} {item['what']!r} of the adapter process", a) for item in held
            if (a := HELD.get(item["kind"], Activity.PARKED)) in SCHEDULED]


def scheduled_work(baseline_threads: set[int], own_tasks: set[asyncio.Task], children: list[int]) -> list[Work]:
    """Everything of the run that will still act: the trial is not over while this is not empty."""
    me = threading.current_thread()
    work = [Work("thread", repr(t.name), a) for t in threading.enumerate()
            if t is not me and t.ident not in baseline_threads and (a := thread_activity(t)) in SCHEDULED]
    work += task_work(own_tasks)
    work += [Work("child", str(pid), a) for pid in children if (a := child_activity(pid)) in SCHEDULED]
    return work
