"""Finding and ending a run's processes: whatever carries the run's owner marker, an MCP server that
registered with the world, a child an audit saw, or a member of the subject's process group."""

from __future__ import annotations

import os
import time
from typing import Any

import psutil

from harness import owner
from harness.trial.activity import Activity, child_activity
from harness.vocabulary import Event, Mark


def processes_of_runs(run_ids: set[str] | list[str]) -> list[dict[str, Any]]:
    """Live processes of these runs: marked as theirs (harness/owner.py), or an MCP server pointed at one."""
    ids = set(run_ids)
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        pid = int(name)
        run = owner.parse(owner.marker_of(pid))
        cmd = owner.command_line(pid)
        if (run is not None and run.run_id in ids) or any(f"/runs/{i}" in cmd for i in ids):
            found.append({"pid": pid, "cmdline": cmd})
    return found


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, start time in clock ticks since boot), or None if gone."""
    fields = owner.proc_stat(pid)
    return (int(fields[2]), int(fields[19])) if fields else None


def start_ticks(pid: int) -> int:
    """When a process started (clock ticks since boot); 0 if it cannot be read."""
    stat = _stat(pid)
    return stat[1] if stat else 0


def run_processes(run_id: str, events: list[dict[str, Any]], subject_pid: int, since_ticks: int = 0,
                  descendants: dict[int, int] | None = None) -> dict[int, dict[str, Any]]:
    """Every live process of the run: pid -> {"source", "role", "process"} (a psutil.Process).

    Candidates: the subject's descendants listed while it was frozen (`descendants`, pid -> start ticks:
    the subject is their subreaper, so this holds processes that escaped by double-forking, whatever
    their environment or session), processes that registered with the world (an MCP server, a
    launcher and its shell: their `role`), children an audit saw, and every process started since the
    subject (`since_ticks`) that carries the run's owner marker or sits in the subject's process group
    (only those are read: a process started before the subject cannot be the run's).
    """
    candidates: dict[int, str] = {}
    for pid, ticks in (descendants or {}).items():
        if start_ticks(pid) == ticks:  # the very process listed, not a later one with its pid
            candidates[pid] = "descendant"
    created: dict[int, float] = {}  # pid -> create_time seen by an audit: a reused pid is never killed
    roles: dict[int, str] = {}
    for e in events:
        if e["event"] == Event.PROCESS_REGISTERED:
            candidates[e["pid"]] = "registered"
            roles[e["pid"]] = e.get("role", "")
        elif e["event"] == Event.MARK and e.get("name") == Mark.AUDIT and e.get("data"):
            for c in e["data"].get("children", []) or []:
                candidates.setdefault(c["pid"], "seen_child")
                created[c["pid"]] = c["create_time"]
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (me, subject_pid):
            continue
        pid = int(name)
        stat = _stat(pid)
        if stat is None or stat[1] < since_ticks:
            continue
        run = owner.parse(owner.marker_of(pid))
        if run is not None and run.run_id == run_id:
            candidates.setdefault(pid, "marked")
        elif stat[0] == subject_pid:
            candidates.setdefault(pid, "process_group")
    found: dict[int, dict[str, Any]] = {}
    for pid, source in candidates.items():
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE or pid in (me, subject_pid):
                continue
            if source == "seen_child" and pid in created and abs(p.create_time() - created[pid]) > 0.01:
                continue
            if source == "registered" and "harness" not in " ".join(p.cmdline()):
                continue  # its pid now names another process
            found[pid] = {"source": source, "role": roles.get(pid), "process": p}
        except (psutil.Error, OSError):
            continue
    return found


def reap_run(run_id: str, events: list[dict[str, Any]], subject_pid: int, since_ticks: int = 0,
             descendants: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Kill every process of the run still alive (run_processes); say which, how much memory each held
    and how much CPU it had used."""
    reaped = []
    for pid, f in run_processes(run_id, events, subject_pid, since_ticks, descendants).items():
        try:
            p = f["process"]
            info = {"pid": pid, "source": f["source"], "cmdline": " ".join(p.cmdline()[:4])[:200],
                    "rss": p.memory_info().rss, "cpu_s": _cpu_s(p), **({"role": f["role"]} if f["role"] else {})}
            p.kill()
            reaped.append(info)
        except (psutil.Error, OSError):
            continue
    for info in reaped:
        _wait_dead(info["pid"])
    return reaped


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return round(t.user + t.system, 4)


class HostCrash:
    """What of a run outlived its host (the subject, SIGKILLed at monotonic ns `t`): the run's processes found
    right after, watched for the observation floor `window_ms`, and past it while one of them is still on (or
    waiting for) a CPU, up to `settle_s` more: a server that reads the end of its stdin and exits, starved of CPU
    by what runs beside it, is ending, not surviving (the settle step's rule for a running child,
    harness/trial/activity.py). survivors() says which still ran at the end, with their memory, the CPU seconds
    they burned and how long the watch lasted."""

    def __init__(self, t: int, found: dict[int, dict[str, Any]], window_ms: float, settle_s: float):
        self.t = t
        self.window_ms = window_ms
        self.start = time.monotonic()
        self.end = self.start + window_ms / 1000
        self.cap = self.end + settle_s
        self.found = found
        self.cpu0: dict[int, float] = {}
        for pid, f in found.items():
            try:
                self.cpu0[pid] = _cpu_s(f["process"])
            except (psutil.Error, OSError):
                continue

    def over(self) -> bool:
        now = time.monotonic()
        if now < self.end:
            return False
        return now >= self.cap or not any(_alive(f["process"]) and child_activity(pid) == Activity.RUNNING
                                          for pid, f in self.found.items())

    def survivors(self) -> dict[str, Any]:
        alive = []
        for pid, f in self.found.items():
            p = f["process"]
            try:
                if not _alive(p):
                    continue
                alive.append({"pid": pid, "source": f["source"], "role": f["role"],
                              "cmdline": " ".join(p.cmdline()[:4])[:200], "rss": p.memory_info().rss,
                              "cpu_s": round(_cpu_s(p) - self.cpu0.get(pid, 0.0), 4)})
            except (psutil.Error, OSError):
                continue
        return {"window_ms": self.window_ms, "watched_ms": round((time.monotonic() - self.start) * 1000, 1),
                "found": len(self.found), "survivors": alive}


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def _wait_dead(pid: int, seconds: float = 5.0) -> None:
    """Until a killed process is gone or a zombie: a child of the (frozen) subject stays a zombie until
    the subject is ended, so waiting for its pid to vanish would wait in vain."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.005)
