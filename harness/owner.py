"""Who owns a process stopbench started, read from outside: one place for the owner marker's format.

Every process stopbench starts says whose it is, so that a stray one can be found and ended, and a live
run's left alone:
- the world: `STOPBENCH_OWNER=world:<runner pid>` in its environment;
- a trial's processes (a spawned subject, the MCP servers its framework starts): `run:<run id>@<runner pid>`;
- a forked subject cannot change the environment /proc shows (that is fixed at exec), so it names itself
  instead: its command name (/proc/<pid>/comm) is `SUBJECT_COMM`, and its owner is its parent.
A process whose owner is gone is a leftover (`stopbench reap` ends those); one whose owner runs is not.
Standard library only: it runs in subjects, the world and the CLI alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

#: the environment variable that carries the marker
OWNER_ENV = "STOPBENCH_OWNER"
#: a forked subject's command name (at most 15 bytes: the kernel's limit)
SUBJECT_COMM = "stopbench-subj"


@dataclass(frozen=True)
class Owner:
    kind: str  # "world" | "run" | "subject"
    runner_pid: int | None  # the stopbench process that owns it; None: not said (written by an older version)
    run_id: str | None = None

    @property
    def alive(self) -> bool:
        """Its runner still runs (an owner not said counts as alive: never end what may be someone's).
        A subject whose runner died was re-parented (to init, pid 1): its owner is gone."""
        if self.kind == "subject":
            return self.runner_pid not in (None, 1) and running(self.runner_pid)
        return self.runner_pid is None or running(self.runner_pid)


def world_marker(runner_pid: int) -> str:
    return f"world:{runner_pid}"


def run_marker(run_id: str, runner_pid: int) -> str:
    return f"run:{run_id}@{runner_pid}"


def parse(marker: str) -> Owner | None:
    """The owner a marker names, or None when it is not one of ours."""
    kind, sep, rest = marker.partition(":")
    if not sep:
        return None
    if kind == "world":
        return Owner("world", int(rest) if rest.isdigit() else None)
    if kind == "run":
        run_id, at, pid = rest.partition("@")
        return Owner("run", int(pid) if at and pid.isdigit() else None, run_id)
    return None


def marker_of(pid: int) -> str:
    """The marker in a process's environment as /proc shows it ("" if none, or unreadable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return ""
    key = OWNER_ENV.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode(errors="replace")
    return ""


def owner_of(pid: int) -> Owner | None:
    """Whose process `pid` is, or None when it is not stopbench's."""
    owner = parse(marker_of(pid))
    if owner is not None:
        return owner
    if _comm(pid) == SUBJECT_COMM:
        return Owner("subject", _ppid(pid))
    return None


def processes() -> Iterator[tuple[int, Owner, str]]:
    """Every process of stopbench on this machine but the caller: (pid, owner, command line)."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        owner = owner_of(pid)
        if owner is not None:
            yield pid, owner, command_line(pid)


def workroot_prefix(adapter: str) -> str:
    """The prefix of a run's temporary folder (trial folders, MCP server state): it names its runner, so
    the folder of a runner killed outright (nothing could remove it) is found and removed later."""
    return f"stopbench-{os.getpid()}-{adapter.replace(':', '_').replace('/', '_')}-"


def stale_workroots(tmp: str | None = None) -> list[str]:
    """Temporary folders of runners that no longer run."""
    import re
    import tempfile

    tmp = tmp or tempfile.gettempdir()
    out = []
    for name in os.listdir(tmp):
        m = re.match(r"stopbench-(\d+)-", name)
        if m and not running(int(m.group(1))) and os.path.isdir(os.path.join(tmp, name)):
            out.append(os.path.join(tmp, name))
    return out


def name_this_process_a_subject() -> None:
    """A forked subject's mark (PR_SET_NAME): visible to `stopbench reap` although its environment is not."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, SUBJECT_COMM.encode(), 0, 0, 0)  # PR_SET_NAME = 15
    except (OSError, AttributeError):  # not Linux
        pass


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _comm(pid: int) -> str:
    return _read(f"/proc/{pid}/comm").decode(errors="replace").strip()


def proc_stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after "pid (comm) ": state, ppid, pgrp, ... (starttime is [19]);
    None when the process is gone. The command name may hold spaces and parentheses, hence rindex."""
    stat = _read(f"/proc/{pid}/stat")
    return stat[stat.rindex(b")") + 2:].split() if stat else None


def running(pid: int) -> bool:
    """Alive and not a zombie (exited, not yet waited for)."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


def _ppid(pid: int) -> int | None:
    fields = proc_stat(pid)
    return int(fields[1]) if fields else None


def command_line(pid: int) -> str:
    return _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


