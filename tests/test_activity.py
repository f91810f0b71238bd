"""Known answers for the one definition of idle and scheduled work (harness/trial/activity.py): each kind of
thread, task and child process, planted in this process, must be classified as what it is."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import threading
import time

import pytest

from harness.trial import activity
from harness.trial.activity import FURNITURE, SCHEDULED, Activity

pytestmark = pytest.mark.skipif(not activity._TIMED, reason="the kernel's syscall view is known on x86_64 and aarch64")


def _settled(thread: threading.Thread, want: Activity, seconds: float = 5.0) -> Activity:
    """The thread's activity once it had time to get where it parks (a loaded machine may take a while)."""
    deadline = time.monotonic() + seconds
    seen = activity.thread_activity(thread)
    while seen != want and time.monotonic() < deadline:
        time.sleep(0.01)
        seen = activity.thread_activity(thread)
    return seen


def _thread(target, *args) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def test_a_sleeping_thread_is_scheduled_work():
    assert _settled(_thread(time.sleep, 30), Activity.SLEEPING) == Activity.SLEEPING
    assert Activity.SLEEPING in SCHEDULED


def test_a_pending_threading_timer_is_a_timed_wait():
    timer = threading.Timer(30, lambda: None)
    timer.daemon = True
    timer.start()
    try:
        assert _settled(timer, Activity.TIMED_WAIT) == Activity.TIMED_WAIT
    finally:
        timer.cancel()


def test_a_thread_parked_on_an_event_nobody_sets_is_idle_but_not_furniture():
    event = threading.Event()
    t = _thread(event.wait)
    try:
        seen = _settled(t, Activity.PARKED)
        assert seen == Activity.PARKED and seen not in SCHEDULED and seen not in FURNITURE
    finally:
        event.set()


def test_a_running_thread_is_scheduled_work():
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    t = _thread(spin)
    try:  # it holds the GIL or waits for it: either way it is runnable, never idle
        assert activity.thread_activity(t) in (Activity.RUNNING, Activity.TIMED_WAIT)
    finally:
        stop.set()


def test_an_executors_idle_worker_is_furniture():
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: None).result()
        (worker,) = [t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")]
        assert _settled(worker, Activity.IDLE_WORKER) == Activity.IDLE_WORKER
        assert Activity.IDLE_WORKER in FURNITURE


def _loop_thread(with_timer: bool) -> tuple[threading.Thread, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    if with_timer:
        loop.call_later(30, lambda: None)
    t = _thread(loop.run_forever)
    return t, loop


@pytest.mark.parametrize("with_timer, want", [(False, Activity.IDLE_LOOP), (True, Activity.TIMED_WAIT)])
def test_an_event_loop_in_its_selector_is_furniture_unless_it_has_a_timer(with_timer, want):
    t, loop = _loop_thread(with_timer)
    try:
        assert _settled(t, want) == want
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(5)
        loop.close()


def test_tasks_with_a_timer_are_scheduled_and_parked_ones_are_not():
    async def main() -> list[tuple[str, str]]:
        parked = asyncio.Event()
        tasks = [asyncio.create_task(asyncio.sleep(30), name="backoff"),
                 asyncio.create_task(asyncio.wait_for(parked.wait(), 30), name="wait_for"),
                 asyncio.create_task(parked.wait(), name="parked")]

        async def in_timeout() -> None:
            async with asyncio.timeout(30):
                await parked.wait()

        tasks.append(asyncio.create_task(in_timeout(), name="timeout"))
        await asyncio.sleep(0.01)
        me = {asyncio.current_task()}
        found = sorted((w.what, w.activity.value) for w in activity.task_work(me))
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return found

    assert asyncio.run(main()) == [("'backoff'", "timer"), ("'timeout'", "timer"), ("'wait_for'", "timer")]


def test_a_bare_timer_of_the_run_is_scheduled_and_the_harness_own_are_not():
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        handle = loop.call_later(30, print)
        own = asyncio.create_task(asyncio.sleep(30), name="harness")
        await asyncio.sleep(0)
        found = [str(w) for w in activity.task_work({asyncio.current_task(), own})]
        handle.cancel()
        own.cancel()
        return found

    assert asyncio.run(main()) == ["task callback print timer"]


def test_a_running_child_is_scheduled_work_and_a_sleeping_one_is_not():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while activity.child_activity(busy.pid) != Activity.RUNNING and time.monotonic() < deadline:
            time.sleep(0.05)
        assert activity.child_activity(busy.pid) == Activity.RUNNING
        deadline = time.monotonic() + 10
        while activity.child_activity(idle.pid) != Activity.PARKED and time.monotonic() < deadline:
            time.sleep(0.05)
        assert activity.child_activity(idle.pid) == Activity.PARKED
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()


def test_an_idle_connection_pools_keepalive_timer_is_furniture_and_the_runs_timers_are_not(tmp_path):
    """aiohttp keeps a released connection for its keep-alive and schedules the pool's `_cleanup` to close it then:
    that timer is the client's furniture. A request's own timeout timer, and a bare timer of the run, are work."""
    import aiohttp

    async def main() -> tuple[list[str], list[str]]:
        async def hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.readline() not in (b"\r\n", b""):
                pass
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
            await writer.drain()
            await reader.read()  # keep the connection: the pool holds it alive
            writer.close()

        server = await asyncio.start_server(hello, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        me = {asyncio.current_task()}
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/") as r:
                assert await r.text() == "ok"
            loop = asyncio.get_running_loop()
            for _ in range(200):  # the released connection goes back to the pool, which schedules its clean-up
                pool = [h for h in loop._scheduled if not h.cancelled()
                        and getattr(h._callback, "__name__", "") == "_weakref_handle"]
                if pool:
                    break
                await asyncio.sleep(0.01)
            idle = [str(w) for w in activity.task_work(me)]  # ... and is not work
            handle = loop.call_later(30, print)
            with_bare = [str(w) for w in activity.task_work(me)]
            handle.cancel()
        server.close()
        await server.wait_closed()
        assert pool, "aiohttp scheduled no keep-alive clean-up: nothing here to tell apart"
        return idle, with_bare

    idle, with_bare = asyncio.run(main())
    assert idle == []
    assert with_bare == ["task callback print timer"]
