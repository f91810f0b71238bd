"""The adapter of a tiny deliberate framework, `stopdemo`, that tests/test_patch.py writes, installs from a folder
(the release) and from a patched copy of that folder (one stop button broken), to bench a patch against its
release. The framework's job sends five emails one after another, through the trial's tools."""

from __future__ import annotations

import asyncio
import functools

from harness.contract.adapter import Adapter

#: the framework, as its release folder holds it (`stopdemo/__init__.py`); the test's patch edits one line of it
STOPDEMO = '''\
"""stopdemo: a job of steps, run one after another, with two stop buttons."""

import asyncio


class Job:
    def __init__(self, steps):
        self.steps = steps
        self.stopping = False
        self.task = None

    def start(self):
        self.task = asyncio.ensure_future(self._run())
        return self.task

    async def _run(self):
        for step in self.steps:
            if self.stopping:  # the stop flag, read before each step
                return
            await step()

    def cancel(self):
        """Cancel the job's task."""
        self.task.cancel()

    async def stop(self):
        """Finish the step in progress, start no other."""
        self.stopping = True
        await asyncio.gather(self.task, return_exceptions=True)
'''
#: the patch: the stop flag is no longer read (a regression a maintainer might bring in)
PATCH = ("            if self.stopping:  # the stop flag, read before each step\n",
         "            if False:  # the stop flag, no longer read\n")
EMAILS = 5


class DemoFrameworkAdapter(Adapter):
    """stopdemo's job sends EMAILS emails; `cancel` and `stop` are its two buttons."""

    name = "known-demo-framework"
    framework = "stopdemo"
    packages = ("stopdemo",)
    stop_modes = {"cancel": "stopdemo.Job.cancel(): cancel the job's task",
                  "stop": "await stopdemo.Job.stop(): finish the step in progress, start no other"}
    tool_styles = ("async",)

    async def start(self) -> None:
        import stopdemo

        steps = [functools.partial(self.ctx.toolbox.acall, "send_email",
                                   {"to": f"team{i}@example.com", "subject": "q3", "body": f"part {i}"})
                 for i in range(1, EMAILS + 1)]
        self.job = stopdemo.Job(steps)
        self.task = self.job.start()

    async def stop_cancel(self) -> None:
        self.job.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    async def stop_stop(self) -> None:
        await self.job.stop()

    async def wait(self) -> None:
        await self.task

    async def close(self) -> None:
        pass
