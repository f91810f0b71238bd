"""Reading other processes in tests: a child may end between being listed and being read."""

from __future__ import annotations

import psutil


def not_a_zombie(p: psutil.Process) -> bool:
    """Alive and not a zombie (a zombie has ended; some containers' pid 1 never reaps, and a child another test
    never waited for stays one)."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def cmdline(p: psutil.Process) -> list[str]:
    """The command line; [] for a process that ended while we looked (a short-lived child such as git)."""
    try:
        return p.cmdline()
    except psutil.Error:
        return []
