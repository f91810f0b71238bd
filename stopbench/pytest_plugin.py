"""The stopbench pytest plugin (entry point `stopbench`): test your own agent's stop button.

Fixtures:
- `stopbench_world`: one world per test session (its base URL); every trial of the session uses it.
- `stopbench_trial(agent, scenario=..., offset=..., stop=..., tool_style=...)`: runs one trial, returns a
  TrialResult (`.row`, `.events`, `.assert_stopped()`).
- `stopbench_anchor`: parametrizes a test over a scenario's event anchors (`@pytest.mark.stopbench_scenario(name)`,
  default q3_report), so one test checks the stop at every moment the scenario defines.

What a trial saw that the assertions do not hold against the agent (tokens billed for a non-streamed request sent
before the stop: TrialResult.notes) is listed in a "stopbench notes" section of the terminal summary.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # loaded in every pytest session of an environment with stopbench: import the harness on use
    from stopbench.agent import AgentContext
    from stopbench.result import TrialResult


NOTES = "stopbench_note"  #: the user property under which a test's trials leave their notes


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stopbench_scenario(name): the scenario whose event anchors "
                                       "`stopbench_anchor` runs over (default q3_report)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Each test's notes once, after the results: said, not asserted."""
    seen: dict[str, list[str]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, note in getattr(report, "user_properties", []):
                if key == NOTES and note not in seen.setdefault(report.nodeid, []):
                    seen[report.nodeid].append(note)
    if any(seen.values()):
        terminalreporter.section("stopbench notes")
        for nodeid, notes in seen.items():
            for note in notes:
                terminalreporter.write_line(f"{nodeid}: {note}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "stopbench_anchor" in metafunc.fixturenames:
        from stopbench.run import event_anchors

        marker = metafunc.definition.get_closest_marker("stopbench_scenario")
        scenario = marker.args[0] if marker and marker.args else "q3_report"
        metafunc.parametrize("stopbench_anchor", event_anchors(scenario))


@pytest.fixture(scope="session")
def stopbench_world() -> Iterator[str]:
    from harness.trial.world_client import WorldProcess

    with WorldProcess() as world:
        yield world.url


@pytest.fixture
def stopbench_trial(stopbench_world: str, tmp_path_factory: pytest.TempPathFactory,
                    request: pytest.FixtureRequest) -> Callable[..., TrialResult]:
    counter = itertools.count(1)

    def trial(agent: Callable[[AgentContext], Any], **options: Any) -> TrialResult:
        from stopbench.run import run_trial

        out = tmp_path_factory.mktemp(f"stopbench-trial-{next(counter)}")
        result = run_trial(agent, world_url=stopbench_world, out=out, **options)
        request.node.user_properties += [(NOTES, note) for note in result.notes()]
        return result

    return trial
