"""How many repetitions a trial cell runs: every one (`all`), or a third only where it can tell something (`agree`).

At an event anchor the world freezes until the stop, so what the world fixes repeats. Under `agree`, a cell runs
its first two repetitions; the rest run only if one of these holds:
- its stop is at a time offset (the stop lands wherever the run happens to be: every repetition counts);
- its scenario sends parallel tool calls (whether a call is in flight or new at the stop is a race, reported as
  a spread, which needs every repetition);
- the first two disagree on any field a repetition must reproduce (harness/results/agreement.py FIELDS: the
  status and every count and flag the tables show, tokens after the stop included), or either is missing.
Like pyperf's calibration, the run spends repetitions where the answer varies; `stopbench compare`'s spread
test reads each side's repetitions from its rows, so a cell of two is compared as two.
"""

from __future__ import annotations

from typing import Any

from harness.results.agreement import disagreeing_fields
from harness.results.selection import CELL, is_anchored
from harness.scenario import Scenario

#: --reps-rule: its name and what it runs
REPS_RULES = {
    "all": "every repetition of every cell",
    "agree": "the first two repetitions of every cell; the rest only at time offsets, in scenarios with parallel "
             "tool calls, or where the first two disagree",
}
DEFAULT_REPS_RULE = "all"
#: the repetitions every cell runs under `agree`
FIRST = 2


def has_parallel_calls(scenario: Scenario) -> bool:
    """A model turn asks for several tool calls at once."""
    return any(len(turn.tool_calls) > 1 for turn in scenario.turns)


def needs_run(rep: int, event_anchored: bool, parallel_calls: bool, earlier: list[dict[str, Any] | None]) -> bool:
    """Whether repetition `rep` of a cell runs under `agree`, given the rows of the cell's first repetitions
    (None where there is none)."""
    if rep < FIRST or not event_anchored or parallel_calls:
        return True
    rows = [r for r in earlier if r is not None]
    return len(rows) < FIRST or bool(disagreeing_fields(rows))


def kept_by_rule(rows: list[dict[str, Any]], scenarios: dict[str, Scenario]) -> list[dict[str, Any]]:
    """The rows a run under `agree` would have measured: every row of a repetition that would have run.
    (A scenario not in `scenarios` counts as having parallel calls: its rows are all kept.)"""
    first = {(tuple(r.get(k) for k in CELL), r["rep"]): r for r in rows if r["rep"] < FIRST}

    def kept(r: dict[str, Any]) -> bool:
        scenario = scenarios.get(r["scenario"])
        earlier = [first.get((tuple(r.get(k) for k in CELL), rep)) for rep in range(FIRST)]
        return needs_run(r["rep"], bool(is_anchored(r, "event")),
                         scenario is None or has_parallel_calls(scenario), earlier)

    return [r for r in rows if kept(r)]
