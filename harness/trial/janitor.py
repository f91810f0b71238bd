"""A run's temporary folder (its trials' folders: checkpoints, a framework's lock and state files) is removed
however the runner ends. The runner removes it itself when it ends or is interrupted; a supervisor may not wait
for that (nox sends SIGTERM 0.3 s after Ctrl-C and SIGKILL 0.2 s later), so a janitor process, in a session of
its own (the terminal's Ctrl-C does not reach it), watches its parent, the runner: once the runner is gone (the
janitor is handed to another parent) it removes the folder; once the folder is gone (the runner removed it) it
ends.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: the janitor's whole program (standard library only, isolated from the caller's path)
PROGRAM = """
import os, shutil, sys, time
folder, runner = sys.argv[1], os.getppid()
while os.getppid() == runner and os.path.exists(folder):
    time.sleep(0.2)
for _ in range(50):  # the runner's last subjects may still be ending and writing into it
    shutil.rmtree(folder, ignore_errors=True)
    if not os.path.exists(folder):
        break
    time.sleep(0.1)
"""
#: how long the runner waits for its janitor to see the folder gone
EXIT_S = 5.0


class Janitor:
    """Started once the folder exists; `done()` after the runner removed it."""

    def __init__(self, folder: Path):
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", PROGRAM, str(folder)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def done(self) -> None:
        try:
            self.proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:  # cannot be, the folder being gone; never leave it running
            self.proc.kill()
            self.proc.wait()
