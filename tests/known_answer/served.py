"""Planted servers for the serving dimension (harness/trial/serve/): each reacts to the client's stop in a known way,
around an adapter whose own stop is known to be right, so the row must say exactly what the server adds.

- `STOPS`: the shipped Starlette app (presses the framework's stop on the disconnect);
- `IGNORES_DISCONNECT`: its generator is cancelled, and it does nothing: the run goes on to its end;
- `NOTICES_LATE`: presses the stop LATE_MS after the disconnect (a poll of `request.is_disconnected()`, a slow hop);
- `LEAVES_ITS_THREAD`: presses the stop, but the endpoint had started a worker thread of its own (the run's
  follow-up, in the default executor) that sends one email THREAD_EMAIL_AFTER_S after the run started.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import yaml

from harness.contract.protocol import ProtocolAdapter
from harness.trial.serve import starlette_sse
from harness.trial.serve.hosted import HostedRun
from harness.trial.serve.paths import ServePath
from tests.known_answer.adapters import EMAIL, _Base, model_loop

#: how late NOTICES_LATE presses the stop after the disconnect
LATE_MS = 1000
#: when LEAVES_ITS_THREAD's thread sends its email, after the run started: after the observation floor (2 s), so
#: only an audit of the server's threads keeps the trial open until it lands
THREAD_EMAIL_AFTER_S = 2.6


#: q3_report with an email that takes SLOW_EMAIL_MS to commit: a stop LATE_MS after the first request lands while
#: the email is in flight, whatever the machine's load (the run is at the email after about 200 ms)
SLOW_EMAIL_MS = 3000


def slow_email_scenarios(root: Path) -> Path:
    """A scenarios folder holding `q3_slow_email` only."""
    source = Path(__file__).parents[2] / "scenarios" / "q3_report.yaml"
    scenario = yaml.safe_load(source.read_text())
    scenario.update(name="q3_slow_email", latency_ms={**scenario["latency_ms"], "email": SLOW_EMAIL_MS})
    root.mkdir(parents=True, exist_ok=True)
    (root / "q3_slow_email.yaml").write_text(yaml.safe_dump(scenario))
    return root


class CancelsTheLoop(_Base):
    """A complete, correct agent loop straight on the model API, whose stop cancels its task."""

    name = "known-cancels-the-loop"

    async def job(self) -> None:
        await model_loop(self.ctx, self.ctx.toolbox.acall)


class JsCancelsTheLoop(ProtocolAdapter):
    """Its JS twin on the Node kit (served_loop.mjs): served by `node-http`, its own process is the handler."""

    name = "known-js-cancels-the-loop"
    stop_modes = {"cancel": "AbortController.abort() on the loop's requests"}
    tool_styles = ("async",)
    folder = Path(__file__).parent
    command = ("node", str(Path(__file__).with_name("served_loop.mjs")))


async def _ignore(hosted: HostedRun) -> None:
    return None


async def _late(hosted: HostedRun) -> None:
    await asyncio.sleep(LATE_MS / 1000)
    await hosted.stop("disconnect")


async def _start_a_thread(hosted: HostedRun) -> None:
    started = time.monotonic()
    toolbox = hosted.toolbox

    def follow_up() -> None:
        time.sleep(max(0.0, THREAD_EMAIL_AFTER_S - (time.monotonic() - started)))
        toolbox.call("send_email", EMAIL)

    asyncio.get_running_loop().run_in_executor(None, follow_up)


def stops(hosted: HostedRun):
    return starlette_sse.app(hosted)


def ignores_disconnect(hosted: HostedRun):
    return starlette_sse.app(hosted, on_disconnect=_ignore)


def notices_late(hosted: HostedRun):
    return starlette_sse.app(hosted, on_disconnect=_late)


def leaves_its_thread(hosted: HostedRun):
    return starlette_sse.app(hosted, on_start=_start_a_thread)


_HERE = "tests.known_answer.served:"
STOPS = ServePath("known-stops", _HERE + "stops", "disconnect")
IGNORES_DISCONNECT = ServePath("known-ignores-disconnect", _HERE + "ignores_disconnect", "disconnect")
NOTICES_LATE = ServePath("known-notices-late", _HERE + "notices_late", "disconnect")
LEAVES_ITS_THREAD = ServePath("known-leaves-its-thread", _HERE + "leaves_its_thread", "disconnect")
#: the same reactions, stopped by the chat page's Stop in headless Chromium (the fetch aborted)
STOPS_BROWSER = ServePath("known-stops+browser", _HERE + "stops", "abort_fetch")
IGNORES_DISCONNECT_BROWSER = ServePath("known-ignores-disconnect+browser", _HERE + "ignores_disconnect",
                                       "abort_fetch")

