"""Finding and ending a run's processes: whatever carries the run's owner marker, an MCP server that
registered with the world, a child an audit saw, or a member of the subject's process group."""

from __future__ import annotations

import os
from typing import Any

import psutil

from harness.vocabulary import OWNER_ENV, Event, Mark


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
        if e["event"] == Event.PROCESS_REGISTERED:
            candidates[e["pid"]] = "registered"
        elif e["event"] == Event.MARK and e.get("name") == Mark.AUDIT and e.get("data"):
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
