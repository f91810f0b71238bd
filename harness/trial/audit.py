"""What is alive in the subject process: threads, asyncio tasks, child processes, sockets, egress.

Taken before the run (baseline) and after each phase; the difference is what the framework left.
Egress is counted by a Python audit hook on socket.connect / getaddrinfo to anything not loopback
(code in C extensions that bypasses Python sockets is not seen; the world's 127.0.0.1 is the only
address any trial needs).

What each thread, task and child is doing (idle, or scheduled work that holds a trial open) is decided in
one place, harness/trial/activity.py; the audit records it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
import threading
from typing import Any

import psutil

from harness.owner import running
from harness.trial import activity

_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "", None}
_egress: list[str] = []
#: descendants of the subject that are the harness's own, not the run's (a CLI's network relay): never counted
_harness_own: set[int] = set()
def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host).endswith(".localhost")


def _hook(event: str, args: tuple) -> None:
    if event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple) and address and not _is_loopback(address[0]):
            _egress.append(f"connect {address[0]}:{address[1] if len(address) > 1 else ''}")
    elif event == "socket.getaddrinfo" and not _is_loopback(args[0]):
        _egress.append(f"resolve {args[0]}")


def install_egress_counter() -> None:
    """Once per subject process (audit hooks cannot be removed; the subject is disposable)."""
    sys.addaudithook(_hook)


def egress_attempts() -> list[str]:
    return list(_egress)


def socket_fds(pid: int | str = "self") -> list[dict[str, Any]]:
    """A process's open sockets by file descriptor (reading /proc/PID/fd is ~10x cheaper than psutil's tables)."""
    out: list[dict[str, Any]] = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            out.append({"fd": int(fd), "inode": target[8:-1]})
    return out


def _children_of(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += map(int, f.read().split())
    except (OSError, ValueError):  # gone meanwhile
        pass
    return out


def harness_own(pid: int, own: bool = True) -> None:
    """Say that a descendant of this process is the harness's own (or no longer), so no audit counts it."""
    (_harness_own.add if own else _harness_own.discard)(pid)


#: ... and the processes whose command line names one of these, with their descendants: the browser a served
#: trial's client presses stop in (harness/trial/serve/browser.py) is the user's, not the run's, and a helper it
#: double-forks (its crash handler, re-parented to the subject as the subreaper) names the browser's profile folder
_harness_marks: set[str] = set()


def harness_process(pid: int, mark: str) -> None:
    """Leave `pid` and its descendants, and any process whose command line holds `mark`, out of this process's
    descendants from now on."""
    _harness_own.add(pid)
    _harness_marks.add(mark)


def _is_harness_own(pid: int) -> bool:
    if pid in _harness_own:
        return True
    if not _harness_marks:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().decode(errors="replace")
    except OSError:
        return False
    return any(mark in cmdline for mark in _harness_marks)


def descendant_pids(pid: int | None = None) -> list[int]:
    """Every live descendant of `pid` (default: this process), from the kernel's per-thread child lists
    (/proc/<pid>/task/<tid>/children): a walk of the tree, not a scan of every process on the machine.
    Zombies (exited, not yet waited for) are not alive and are left out, and so are the harness's own processes
    (`harness_own`, `harness_process`)."""
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):  # kernels without CONFIG_PROC_CHILDREN
        return [c.pid for c in psutil.Process(pid).children(recursive=True)
                if c.status() != psutil.STATUS_ZOMBIE and c.pid not in _harness_own]
    found, stack = [], [pid or os.getpid()]
    while stack:
        kids = [k for k in _children_of(stack.pop()) if not _is_harness_own(k)]
        found += kids
        stack += kids
    # the subject is a subreaper: orphans that exit become its zombies
    return [p for p in found if running(p) and p not in _harness_own]


def snapshot(exclude_tasks: set | None = None) -> dict[str, Any]:
    me = psutil.Process()
    threads = [{"ident": t.ident, "name": t.name, "daemon": t.daemon} for t in threading.enumerate()]
    try:
        loop = asyncio.get_running_loop()
        tasks = [t for t in asyncio.all_tasks(loop) if t not in (exclude_tasks or set()) and not t.done()]
    except RuntimeError:
        tasks = []
    children = []
    for pid in descendant_pids():
        try:
            c = psutil.Process(pid)
            children.append({"pid": c.pid, "ppid": c.ppid(), "create_time": c.create_time(),
                              "cmdline": " ".join(c.cmdline()[:4])[:200], "rss": c.memory_info().rss})
        except psutil.Error:
            continue
    sockets = socket_fds()
    return {
        "threads": threads,
        "tasks": [t.get_name() + ":" + getattr(t.get_coro(), "__qualname__", "?") for t in tasks],
        "children": children,
        "sockets": sockets,
        "egress": egress_attempts(),
        "rss": me.memory_info().rss,
    }


def left_since(baseline: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """What is alive now that was not alive at baseline."""
    base_threads = {t["ident"] for t in baseline["threads"]}
    new_threads = [t for t in now["threads"] if t["ident"] not in base_threads]
    alive = {t.ident: t for t in threading.enumerate()}
    for t in new_threads:
        thread = alive.get(t["ident"])
        t["activity"] = str(activity.thread_activity(thread) if thread else activity.Activity.PARKED)
    base_tasks = list(baseline["tasks"])
    new_tasks = []
    for t in now["tasks"]:
        if t in base_tasks:
            base_tasks.remove(t)
        else:
            new_tasks.append(t)
    base_fds = {(s["fd"], s["inode"]) for s in baseline["sockets"]}
    return {
        "threads": new_threads,
        # idle pools and event loops a process keeps are counted apart from what the run left behind
        "threads_busy": [t for t in new_threads if t["activity"] not in activity.FURNITURE],
        "tasks": new_tasks,
        "children": now["children"],
        "sockets": [s for s in now["sockets"] if (s["fd"], s["inode"]) not in base_fds],
        "egress": now["egress"],
    }
