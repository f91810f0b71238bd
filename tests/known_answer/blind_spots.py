"""Known answers for what a trial must see after the stop (issue #11): late work, runaways, a stop that
blocks the loop, an escaped process, a pending timer, a late trigger. Each adapter does one deliberate
thing, directly against the world, so the row it must produce is not in doubt.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

from tests.known_answer.adapters import EMAIL, _Base, model_loop

MEETING = {"title": "post-mortem", "when": "2026-12-02T10:00:00Z"}
#: the escaped process's command line carries this, so a test can tell whether it still runs
ESCAPEE_TAG = "stopbench-known-escapee"


class LateCalendar(_Base):
    """stop() cancels the job and returns at once; 300 ms later a thread it left books one meeting (the
    calendar service answers 100 ms later): after q3_report's 250 ms settle window, inside the floor."""

    name = "known-late-calendar"

    async def stop_cancel(self) -> None:
        self.task.cancel()

        def late() -> None:
            time.sleep(0.3)
            self.ctx.toolbox.call("book_meeting", MEETING)

        threading.Thread(target=late, daemon=True).start()


class NeverQuiet(_Base):
    """stop() cancels the job, but a thread sends an email every 100 ms, forever."""

    name = "known-never-quiet"

    async def stop_cancel(self) -> None:
        self.task.cancel()

        def forever() -> None:
            while True:
                self.ctx.toolbox.call("send_email", EMAIL)
                time.sleep(0.1)

        threading.Thread(target=forever, daemon=True).start()


class BlocksLoopInStop(_Base):
    """stop() sets off three emails in a thread, then blocks the event loop for good (a sync wait)."""

    name = "known-blocks-loop-in-stop"

    async def stop_cancel(self) -> None:
        def three() -> None:
            for _ in range(3):
                self.ctx.toolbox.call("send_email", EMAIL)

        threading.Thread(target=three, daemon=True).start()
        time.sleep(3600)


# a launcher that starts a grandchild in a new session with an empty environment, then exits at once:
# the grandchild carries no owner marker, no process group of ours, no parent of ours
_ESCAPE = (
    "import subprocess, sys\n"
    f"subprocess.Popen(['/usr/bin/env', '-i', sys.executable, '-c', 'import time; time.sleep(30)', '{ESCAPEE_TAG}'],\n"
    "                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,\n"
    "                 stderr=subprocess.DEVNULL)\n"
)


class EscapedGrandchild(_Base):
    """start() runs a launcher that double-forks a sleeper away (new session, empty environment) and exits."""

    name = "known-escaped-grandchild"

    async def start(self) -> None:
        await super().start()
        subprocess.run([sys.executable, "-c", _ESCAPE], check=True)


class PendingTimer(_Base):
    """stop() cancels the job and schedules an email for 60 s later (a threading.Timer): work still pending,
    past the settle deadline, so the trial is a runaway that names it."""

    name = "known-pending-timer"

    async def stop_cancel(self) -> None:
        self.task.cancel()
        timer = threading.Timer(60, self.ctx.toolbox.call, ("send_email", EMAIL))
        timer.daemon, timer.name = True, "pending-timer"
        timer.start()


class BlocksLoopAtStart(_Base):
    """start() holds the event loop for 300 ms after the run started: a stop due at 50 ms fires ~250 ms
    late, as under a loaded machine."""

    name = "known-blocks-loop-at-start"

    async def start(self) -> None:
        await super().start()
        time.sleep(0.3)


class AnyioWorkerIdle(_Base):
    """The job sends one email through anyio.to_thread.run_sync (as AnyIO-based frameworks run sync tools),
    then waits; the worker thread goes back to AnyIO's pool, idle: no live work after the stop."""

    name = "known-anyio-worker-idle"
    seconds = 0.0

    async def job(self) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._send)
        await super().job()

    def _send(self) -> None:
        self.ctx.toolbox.call("send_email", EMAIL)
        time.sleep(self.seconds)


class AnyioWorkerBusy(AnyioWorkerIdle):
    """The same, but the worker thread is still in the tool (a 60 s sleep) when the trial is audited."""

    name = "known-anyio-worker-busy"
    seconds = 60.0


class OpenDatabase(_Base):
    """start() opens an aiosqlite connection the app keeps until close() (as a session service or a
    checkpointer does); the job is cancelled by the stop. The connection's worker thread waits, idle."""

    name = "known-open-database"

    async def start(self) -> None:
        import aiosqlite

        self.db = await aiosqlite.connect(str(self.ctx.workdir / "app.sqlite"))
        await self.db.execute("create table if not exists t (x)")
        await super().start()

    async def close(self) -> None:
        await self.db.close()


class SlowSteps(_Base):
    """A complete agent loop that takes 1 s before each tool call and each next model request (as a framework
    with slow steps does: llama-index-workflows 2.22 took 1.5-2 s), run on a task of its own; the job is the
    UI's loop, and stop leaves it (as a `break` does) while the run goes on. Stopped at the second model
    request: the email ~1 s after, the final answer's request ~1 s after the email committed, i.e. after the
    observation floor and more than the scenario's 250 ms settle window after the run's last activity."""

    name = "known-slow-steps"
    PAUSE_S = 1.0

    async def start(self) -> None:
        async def slow_call(name: str, arguments: dict) -> str:
            await asyncio.sleep(self.PAUSE_S)
            result = await self.ctx.toolbox.acall(name, arguments)
            await asyncio.sleep(self.PAUSE_S)  # before the next model request
            return result

        self.left = asyncio.Event()
        self.run_task = asyncio.create_task(model_loop(self.ctx, slow_call))
        await super().start()

    async def job(self) -> None:
        await self.left.wait()

    async def stop_cancel(self) -> None:
        self.left.set()

    async def close(self) -> None:
        self.run_task.cancel()
