"""Shared fixtures: one world process for the whole session, and a client for it."""

from __future__ import annotations

import pytest

from harness.trial.world_client import WorldClient, WorldProcess


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
