"""The example agent's stop tests, with the stopbench pytest plugin (installed with stopbench).

    pytest examples/openai_agent -q

`careful_agent` checks the stop between stream chunks and before each tool call, and its button ("wait")
says stopped once the agent has returned: it passes at every event anchor of q3_report. `careless_agent`
only stops its UI; its test is expected to fail and shows what a failing stop test tells you.
`careful_plain_agent` asks for whole answers (`stream=False`) and cancels its request when the flag is set: the
answer it asked for before the stop is still generated in full (a provider bills it whatever the client does),
which the summary reports under "stopbench notes" and `assert_stopped` does not hold against it.
"""

from __future__ import annotations

import pytest

from stopbench import StopLied

from .agent import careful_agent, careful_plain_agent, careless_agent


def test_careful_agent_stops_at_every_anchor(stopbench_trial, stopbench_anchor):
    result = stopbench_trial(careful_agent, offset=stopbench_anchor, stop="wait", observe_ms=500)
    result.assert_stopped()


def test_careful_agent_without_streaming_stops_at_every_anchor(stopbench_trial, stopbench_anchor):
    result = stopbench_trial(careful_plain_agent, offset=stopbench_anchor, stop="wait", observe_ms=500)
    result.assert_stopped()


@pytest.mark.xfail(raises=StopLied, strict=True, reason="its stop button only stops the UI: the job goes on")
def test_careless_agent_does_not_stop(stopbench_trial):
    result = stopbench_trial(careless_agent, offset="on:llm_request:2", stop="event", observe_ms=500)
    result.assert_stopped()
