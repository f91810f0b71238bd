"""Shared fixtures: one world process for the whole session, and a client for it."""

from __future__ import annotations

import os

import pytest

from harness.trial.priority import BACKGROUND_NICE
from harness.trial.world_client import WorldClient, WorldProcess


def pytest_configure(config: pytest.Config) -> None:
    """The suite's own computing (a report's tables, a wheel's build) runs at the trials' CPU priority
    (harness/trial/priority.py), in every xdist worker too: at full priority beside them it starved their subjects,
    which then missed their deadlines or let a stream run on, whatever their stop did."""
    os.setpriority(os.PRIO_PROCESS, 0, max(os.getpriority(os.PRIO_PROCESS, 0), BACKGROUND_NICE))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first: under pytest-xdist each worker then takes its share of them at the start, and the
    short ones fill in, instead of one long test left alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def world():
    """A started world server in its own process; always stopped at the end of the session."""
    proc = WorldProcess()
    try:
        proc.start()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def world_client(world):
    client = WorldClient(world.url)
    try:
        yield client
    finally:
        client.close()
