"""The example agent's stop tests, with the stopbench pytest plugin (installed with stopbench).

    pytest examples/openai_agent -q

`careful_agent` checks the stop between stream chunks and before each tool call, and its button ("wait")
says stopped once the agent has returned: it passes at every event anchor of q3_report. `careless_agent`
only stops its UI; its test is expected to fail and shows what a failing stop test tells you.
"""

from __future__ import annotations

import pytest

from stopbench import StopLied

from .agent import careful_agent, careless_agent


def test_careful_agent_stops_at_every_anchor(stopbench_trial, stopbench_anchor):
    result = stopbench_trial(careful_agent, offset=stopbench_anchor, stop="wait", observe_ms=500)
    result.assert_stopped()


@pytest.mark.xfail(raises=StopLied, strict=True, reason="its stop button only stops the UI: the job goes on")
def test_careless_agent_does_not_stop(stopbench_trial):
    result = stopbench_trial(careless_agent, offset="on:llm_request:2", stop="event", observe_ms=500)
    result.assert_stopped()
