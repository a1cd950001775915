"""A simulator on loopback for the simulator's tests, reset for each test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from chat.simulator import SimulatorConfig, SimulatorServer


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatorServer]:
    config = SimulatorConfig(tps=0, ttft_ms=0, think_tokens=8, answer_tokens=30)
    with SimulatorServer(config) as sim:
        yield sim


@pytest.fixture
def sim(server: SimulatorServer) -> SimulatorServer:
    server.reset()
    return server


@pytest.fixture
def client(sim: SimulatorServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, timeout=10) as http:
        yield http
