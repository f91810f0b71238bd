"""The full run's plan (harness/bench_plan.py, what `nox -s bench` runs): for every declared framework, one
`stopbench run` that the CLI and the planner accept, with the matrices it says, and nothing else."""

from __future__ import annotations

import collections

import pytest

from harness.bench_plan import MITIGATION_MATRIX, SERVED_MATRIX, bench_args, served_paths, slice_tools
from harness.cli import _also, build_parser
from harness.contract.adapter import Adapter
from harness.frameworks import discover
from harness.scenario import load_scenarios
from harness.trial.runner import RunOptions, plan_all

FRAMEWORKS = {f.name: f for f in discover()}


def planned(name: str, reps: str = "3"):
    """The trials `nox -s bench` plans for the framework's own adapter, against a class carrying its declaration."""
    framework = FRAMEWORKS[name]
    declaration = framework.adapter
    cls = type(f"Declared_{name}", (Adapter,), {**declaration.attributes(), "name": name})
    planned_args = bench_args(framework, reps)
    assert all(text.count("--reps") == 1 for text in planned_args[planned_args.index("--also") + 1::2])
    args = build_parser().parse_args(["run", "--adapter", name, *planned_args])
    opts = RunOptions(adapter=name, reps=args.reps, providers=args.provider or [])
    opts.also = [_also(opts, text) for text in args.also]
    return plan_all(cls, opts, load_scenarios())


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_every_framework_s_full_run_is_a_plan_the_runner_takes(name):
    specs = planned(name)
    declaration = FRAMEWORKS[name].adapter
    assert {s.provider for s in specs} == set(declaration.providers)
    mitigated = [s for s in specs if s.mitigation.name != "none"]
    assert {s.mode for s in mitigated} == set(declaration.stop_modes)
    assert {s.mitigation.name for s in mitigated} == set(MITIGATION_MATRIX["mitigations"])
    home = declaration.providers[0]
    beyond_main = [s for s in specs if s.provider != home or s.billing or s.serve_path != "in-process"] + mitigated
    assert {s.tool_style for s in beyond_main} == {slice_tools(declaration)}
    assert {s.tool_style for s in specs if s.provider == home} >= set(declaration.tool_styles)
    assert {s.offset.kind for s in specs if s.provider != home} <= {"event"}


def test_the_served_stop_is_measured_for_each_framework_but_the_clis_on_its_runtime_s_two_paths():
    served = {name: sorted({s.serve_path for s in planned(name) if s.serve_path != "in-process"})
              for name in FRAMEWORKS}
    assert served["codex-cli"] == served["claude-code"] == []
    assert served["langgraph"] == served["reference"] == sorted(SERVED_MATRIX["paths"]["python"])
    assert served["vercel-ai"] == served["reference-js"] == sorted(SERVED_MATRIX["paths"]["node"])
    assert sum(1 for paths in served.values() if len(paths) >= 2) >= 6
    assert served_paths(FRAMEWORKS["langgraph-js"]) == SERVED_MATRIX["paths"]["node"]


def test_the_reference_s_served_cells_are_its_modes_on_each_path_at_the_main_matrix_s_cell():
    """Exact counts: the served trials are every mode x two anchors x two paths x the repetitions, each beside an
    in-process trial of the same cell in the main matrix."""
    specs = planned("reference", reps="3")
    served = [s for s in specs if s.serve_path != "in-process"]
    modes = FRAMEWORKS["reference"].adapter.stop_modes
    assert len(served) == len(modes) * 2 * 2 * 3
    assert {s.offset.text for s in served} == set(SERVED_MATRIX["offsets"])
    cells = collections.Counter((s.mode, s.scenario, s.offset.text, s.tool_style, s.provider) for s in specs
                                if s.serve_path == "in-process" and s.mitigation.name == "none" and s.billing == ""
                                and s.host == "close" and s.mcp_launch == "direct")
    for s in served:
        assert cells[(s.mode, s.scenario, s.offset.text, s.tool_style, s.provider)] == 3


def test_the_slices_run_in_the_style_the_most_modes_run_in_async_first_among_equals():
    """smolagents declares async tools but none of its modes runs with them: its slices are sync; an orchestrator
    has MCP tools only; a framework whose every mode runs async tools slices in async."""
    assert slice_tools(FRAMEWORKS["smolagents"].adapter) == "sync"
    assert slice_tools(FRAMEWORKS["codex-cli"].adapter) == "mcp"
    assert slice_tools(FRAMEWORKS["pydantic-ai"].adapter) == "async"
    for name, framework in FRAMEWORKS.items():
        declaration = framework.adapter
        ran = {st: sum((m, st) not in declaration.unsupported for m in declaration.stop_modes)
               for st in declaration.tool_styles}
        assert ran[slice_tools(declaration)] == max(ran.values()), name
