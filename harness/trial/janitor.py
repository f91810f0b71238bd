"""A run's temporary folder (its trials' folders: checkpoints, a framework's lock and state files) is removed
however the runner ends. The runner removes it itself when it ends or is interrupted; a supervisor may not wait
for that (nox sends SIGTERM 0.3 s after Ctrl-C and SIGKILL 0.2 s later), so a janitor process, in a session of
its own (the terminal's Ctrl-C does not reach it), waits for the runner's end (its stdin pipe closes when the
runner and its forked subjects are gone) and removes the folder then.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: the janitor's whole program: wait for the end of stdin, then remove the folder (trying again for a while, as
#: the last subjects end and stop writing into it)
PROGRAM = """
import shutil, sys, time
sys.stdin.buffer.read()
for _ in range(50):
    shutil.rmtree(sys.argv[1], ignore_errors=True)
    if not __import__("os").path.exists(sys.argv[1]):
        break
    time.sleep(0.1)
"""
#: how long the runner waits for its janitor once it has removed the folder itself
EXIT_S = 5.0


class Janitor:
    """Started once the folder exists; `done()` after the runner removed it (the janitor then finds nothing)."""

    def __init__(self, folder: Path):
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", PROGRAM, str(folder)], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def done(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:  # a subject still holds the pipe: it removes the folder when that ends
            pass
