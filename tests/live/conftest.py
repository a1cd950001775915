"""Two Daphne processes for the tests that need several (`daphnes`)."""

from __future__ import annotations

import pytest

from tests.support.services.daphnes import Daphne, daphne_env, start_all


@pytest.fixture(scope="module")
def _daphne_pair(test_mode, tmp_path_factory, django_db_setup, _simulator_server):
    if test_mode == "sqlite":
        pytest.skip("several processes need PostgreSQL and Redis")
    env = daphne_env()
    logs = tmp_path_factory.mktemp("daphnes")
    servers = [Daphne(env, logs / f"daphne-{i}.log") for i in range(2)]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def daphnes(_daphne_pair, simulator):
    """Two Daphne processes on the test database, started once per module
    (each start costs seconds); one that a test stopped or killed is started
    again."""
    start_all([server for server in _daphne_pair if not server.running])
    return _daphne_pair
