"""The kit base class: one stop flag that works from threads and the loop, a wait() that never ends the job, the
task_cancel button, close() in order, and the model client's settings stated once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.contract.adapter import TrialContext
from harness.contract.kit import Flag, KitAdapter, in_own_thread

URL = "http://127.0.0.1:9/runs/r/v1"


class Job(KitAdapter):
    name = "kit-job"
    stop_modes = {"task_cancel": "task.cancel() on the job", "flag": "the stop flag"}
    stop_flag = KitAdapter.flag_and_wait

    async def start(self) -> None:
        self.job = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        await self.stop_pressed.wait()


def _adapter(cls: type[KitAdapter] = Job, mode: str = "task_cancel") -> KitAdapter:
    ctx = TrialContext(run_id="r", scenario=None, model_base_url=URL, services_base_url="",  # type: ignore[arg-type]
                       model_name="m", mode=mode, tool_style="async", toolbox=None, mcp=None,  # type: ignore[arg-type]
                       workdir=Path("."))
    return cls(ctx)


def test_the_flag_is_set_from_a_thread_and_awaited_on_the_loop():
    async def main() -> None:
        flag = Flag()
        waiting = asyncio.ensure_future(flag.wait())
        await asyncio.sleep(0.01)
        assert not waiting.done() and not flag.is_set()
        await in_own_thread(flag.set)
        await asyncio.wait_for(waiting, 1)
        assert flag.is_set()
        await asyncio.wait_for(flag.wait(), 1)  # set: returns at once
        flag.clear()
        assert not flag.is_set()

    asyncio.run(main())


def test_wait_only_watches_and_the_buttons_end_the_job():
    async def main() -> None:
        a = _adapter()
        await a.start()
        waiter = asyncio.ensure_future(a.wait())
        await asyncio.sleep(0.01)
        waiter.cancel()  # a deadline, the loop shutting down: the job goes on
        await asyncio.sleep(0.01)
        assert not a.job.done()
        await a.stop_task_cancel()
        assert a.job.cancelled()

        b = _adapter(mode="flag")
        await b.start()
        await b.stop()  # stop_flag: the job's loop sees the flag and ends
        assert b.job.done() and not b.job.cancelled() and b.stop_pressed.is_set()

    asyncio.run(main())


def test_close_ends_a_running_job_then_calls_the_closers_last_first():
    calls: list[str] = []

    async def main() -> None:
        a = _adapter()
        a.on_close(lambda: calls.append("client"))

        async def session() -> None:
            calls.append("session:" + ("ended" if a.job.done() else "running"))
        a.on_close(session)
        await a.start()
        await a.close()

    asyncio.run(main())
    assert calls == ["session:ended", "client"]


def test_a_job_left_running_at_close_when_the_adapter_says_so():
    class Leaves(Job):
        cancel_on_close = False

    async def main() -> None:
        a = _adapter(Leaves)
        await a.start()
        await a.close()
        assert not a.job.done()
        a.job.cancel()

    asyncio.run(main())


def test_the_model_client_settings_are_stated_once():
    a = _adapter()
    seen: list[dict] = []
    a.model_client(lambda **kw: seen.append(kw), model="m")
    a.model_client(lambda **kw: seen.append(kw), url="api_base")
    # the world's URL and the key, nothing else: retries, back-off and timeouts are the client's defaults
    assert seen == [{"base_url": URL, "api_key": "x", "model": "m"}, {"api_base": URL, "api_key": "x"}]
    assert a.client_settings() == {"base_url": URL, "api_key": "x"}
