"""pytest plugin: `--adapter NAME` selects the adapter the contract tests run against; `--contract-scenario` and
`--contract-offset` the trial they run (e.g. the provider-fault scenario, flaky_provider)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--adapter", action="append", default=[],
                     help="adapter for stopbench's contract tests (name, entry point or package.module:Class)")
    parser.addoption("--contract-scenario", default="q3_report",
                     help="the scenario of the contract trials (default q3_report)")
    parser.addoption("--contract-offset", default="on:llm_request:2",
                     help="where their stop is pressed (default on:llm_request:2: mid-run, after the first tool call)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "contract_adapter" not in metafunc.fixturenames:
        return
    names = metafunc.config.getoption("--adapter") or []
    if not names:
        metafunc.parametrize("contract_adapter", [pytest.param(None, marks=pytest.mark.skip(
            reason="no --adapter given"))])
        return
    if "mode_and_style" in metafunc.fixturenames:
        from harness.contract.registry import load_adapter

        # every declared pair, the unsupported ones too: the test checks that those come out skipped
        params = []
        for name in names:
            cls = load_adapter(name)
            params += [(name, (m, s)) for m in cls.stop_modes for s in cls.tool_styles]
        metafunc.parametrize(("contract_adapter", "mode_and_style"), params,
                             ids=[f"{n}-{m}-{s}" for n, (m, s) in params], scope="module")
    else:
        metafunc.parametrize("contract_adapter", names, scope="module")
