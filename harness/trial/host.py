"""What an adapter process in another language leaves, in the audit's own terms.

The process (harness/contract/protocol.py) is the app around the agent, as the subject is for an adapter in
Python: while it is connected it is not counted as a child left behind (its own children are). What it holds comes
two ways: what only it can see, its answer to the protocol's `audit` (pending timers, immediates, runtime requests,
worker threads: counted by the one rule of idle and scheduled work, harness/trial/activity.py `HELD`), and what the
kernel shows from outside, its network sockets (/proc/<pid>/fd against the socket tables). Its children are found
by walking the subject's tree, as for any adapter. Its egress attempts (what it resolved or connected to beyond
loopback, from its audit) join the subject's, also after close.
"""

from __future__ import annotations

from typing import Any

from harness.contract.adapter import HostHoldings
from harness.trial.activity import HELD, HELD_TASKS, HELD_THREADS, Activity, Work, held_work
from harness.trial.audit import socket_fds

#: the kernel's socket tables of the network namespace: a socket whose inode is listed is a network socket
SOCKET_TABLES = ("tcp", "tcp6", "udp", "udp6")


def network_sockets(pid: int) -> list[dict[str, Any]]:
    """The process's network sockets (TCP, UDP), by file descriptor. Its unix sockets are left out: Node gives a
    child's stdio a unix socket pair where Python gives it a pipe, and the child is counted as a child."""
    inodes: set[str] = set()
    for table in SOCKET_TABLES:
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                inodes |= {line.split()[9] for line in f.read().splitlines()[1:] if len(line.split()) > 9}
        except OSError:
            continue
    return [{"pid": pid, **s} for s in socket_fds(pid) if s["inode"] in inodes]


def merged(left: dict[str, Any], holdings: HostHoldings | None) -> dict[str, Any]:
    """The audit's `left_since` with what the adapter process holds added; unchanged without one."""
    if holdings is None:
        return left
    if holdings.served is not None:
        return served_merged(left, holdings)
    if not holdings.connected:  # closed: it is no longer the app; what it tried to reach still counts
        return {**left, "egress": [*left["egress"], *holdings.egress]}
    held = holdings.held
    workers = [{"ident": f"{holdings.pid}:{i['id']}", "name": i["what"], "daemon": False,
                "activity": str(HELD[i["kind"]])} for i in held if i["kind"] in HELD_THREADS]
    return {**left,
            "children": [c for c in left["children"] if c["pid"] != holdings.pid],
            "tasks": [*left["tasks"], *(f"{i['kind']}:{i['what']}" for i in held if i["kind"] in HELD_TASKS)],
            "threads": [*left["threads"], *workers],
            "threads_busy": [*left["threads_busy"], *workers],
            "sockets": [*left["sockets"], *network_sockets(holdings.pid)],
            "egress": [*left["egress"], *holdings.egress],
            "adapter_process": {"pid": holdings.pid, "held": held, "error": holdings.error}}


def served_merged(left: dict[str, Any], holdings: HostHoldings) -> dict[str, Any]:
    """A served trial's server is the app: not a child left behind while it serves; what it left (its threads,
    tasks, sockets, egress, as its own audit found them) is the run's, beside the subject's."""
    assert holdings.served is not None
    theirs = holdings.served["left"]

    def threads(key: str) -> list[dict[str, Any]]:
        return [{**t, "ident": f"{holdings.pid}:{t['ident']}"} for t in theirs[key]]

    return {**left,
            "children": [c for c in left["children"] if c["pid"] != holdings.pid],
            "tasks": [*left["tasks"], *(f"server:{t}" for t in theirs["tasks"])],
            "threads": [*left["threads"], *threads("threads")],
            "threads_busy": [*left["threads_busy"], *threads("threads_busy")],
            "sockets": [*left["sockets"], *({"pid": holdings.pid, **s} for s in theirs["sockets"])],
            "egress": [*left["egress"], *theirs["egress"]],
            "server_process": {"pid": holdings.pid, "error": holdings.error}}


def work(holdings: HostHoldings | None) -> list[Work]:
    """The adapter process's (or the server's) scheduled work (none without one)."""
    if holdings is None:
        return []
    if holdings.served is not None:
        return [Work(w["kind"], f"{w['what']} in the server", Activity(w["activity"]))
                for w in holdings.served["work"]]
    return held_work(holdings.held)
