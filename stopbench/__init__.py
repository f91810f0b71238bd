"""stopbench for your own agent: run it through one trial with a stop pressed at a chosen moment, and check
from the outside what it did after the stop (tokens, model requests, side effects, threads, processes).

    from stopbench import AgentContext, run_trial

    async def my_agent(ctx: AgentContext) -> None:
        ...  # your agent, its model at ctx.model_base_url, its tools ctx.tools; it stops when
             # ctx.stop_requested is set (or when its task is cancelled, with stop="cancel")

    result = run_trial(my_agent, scenario="q3_report", offset="on:effect_received:email")
    result.assert_stopped()   # StopLied: "1 email in flight at the stop committed 12 ms after stop returned
                              # (email_1: to=ops@example.com, ...)"

In pytest, the plugin (registered as `stopbench`) gives a session world and `stopbench_trial`; see
stopbench/pytest_plugin.py and examples/openai_agent/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness import __version__

if TYPE_CHECKING:
    from stopbench.agent import AgentContext, agent_adapter
    from stopbench.result import ProcessesLeft, ResumeRepeated, StopFailed, StopHung, StopLied, TrialResult
    from stopbench.run import event_anchors, run_adapter_trial, run_trial

__all__ = ["AgentContext", "ProcessesLeft", "ResumeRepeated", "StopFailed", "StopHung", "StopLied", "TrialResult",
           "__version__", "agent_adapter", "event_anchors", "run_adapter_trial", "run_trial"]

# pytest loads stopbench.pytest_plugin (and so this package) in every session of an environment with stopbench:
# the harness is imported when a name is first used, not then
_WHERE = {"AgentContext": "agent", "agent_adapter": "agent", "StopLied": "result", "StopHung": "result",
          "StopFailed": "result", "ResumeRepeated": "result", "ProcessesLeft": "result", "TrialResult": "result",
          "event_anchors": "run", "run_trial": "run", "run_adapter_trial": "run"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"stopbench.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'stopbench' has no attribute {name!r}")
