"""What is alive in the subject process: threads, asyncio tasks, child processes, sockets, egress.

Taken before the run (baseline) and after each phase; the difference is what the framework left.
Egress is counted by a Python audit hook on socket.connect / getaddrinfo to anything not loopback
(code in C extensions that bypasses Python sockets is not seen; the world's 127.0.0.1 is the only
address any trial needs).
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

_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "", None}
_egress: list[str] = []
#: executors' worker loops: (file, function) of the frame that parks a reusable worker on its queue
_POOL_LOOPS = (
    (os.path.join("concurrent", "futures", "thread.py"), "_worker"),  # ThreadPoolExecutor (asyncio.to_thread)
    (os.path.join("anyio", "_backends", "_asyncio.py"), "run"),  # AnyIO's WorkerThread (anyio.to_thread)
    # an aiosqlite connection's worker, waiting for its next statement (an app's open database, not work)
    (os.path.join("aiosqlite", "core.py"), "_connection_worker_thread"),
)
_IDLE_FILES = ("threading.py", "queue.py", *(f for f, _ in _POOL_LOOPS))


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


def _idle_pool_thread(ident: int) -> bool:
    """A thread parked in an executor's queue (idle, reusable) rather than doing work: an executor's
    worker loop (_POOL_LOOPS: concurrent.futures' `_worker`, AnyIO's `WorkerThread.run`) waiting in the
    queue, and nothing else on its stack. A `threading.Timer` (or any thread waiting in threading.py
    alone) is scheduled work, not idle."""
    frame = sys._current_frames().get(ident)
    if frame is None:
        return False
    in_pool_worker = False
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.endswith(_IDLE_FILES):
            return False
        in_pool_worker |= any(code.co_filename.endswith(f) and code.co_name == name for f, name in _POOL_LOOPS)
        frame = frame.f_back
    return in_pool_worker


def _socket_fds() -> list[dict[str, Any]]:
    """Open sockets by file descriptor (reading /proc/self/fd is ~10x cheaper than psutil's tables)."""
    out = []
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
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


def descendant_pids(pid: int | None = None) -> list[int]:
    """Every live descendant of `pid` (default: this process), from the kernel's per-thread child lists
    (/proc/<pid>/task/<tid>/children): a walk of the tree, not a scan of every process on the machine.
    Zombies (exited, not yet waited for) are not alive and are left out."""
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):  # kernels without CONFIG_PROC_CHILDREN
        return [c.pid for c in psutil.Process(pid).children(recursive=True)
                if c.status() != psutil.STATUS_ZOMBIE]
    found, stack = [], [pid or os.getpid()]
    while stack:
        kids = _children_of(stack.pop())
        found += kids
        stack += kids
    return [p for p in found if running(p)]  # the subject is a subreaper: orphans that exit become its zombies


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
    sockets = _socket_fds()
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
    for t in new_threads:
        t["idle_pool_worker"] = _idle_pool_thread(t["ident"])
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
        "threads_busy": [t for t in new_threads if not t["idle_pool_worker"]],
        "tasks": new_tasks,
        "children": now["children"],
        "sockets": [s for s in now["sockets"] if (s["fd"], s["inode"]) not in base_fds],
        "egress": now["egress"],
    }
