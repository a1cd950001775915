"""The MCP servers of the MCP tests (tests/tools/mcp/servers.py), started
once per test process; and the supervised stdio servers stopped after the
module."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from chat.tools.mcp import catalog, thread
from tests.tools.mcp import servers


@pytest.fixture(scope="session")
def our_http() -> Iterator[str]:
    command = [sys.executable, "-m", "tests.tools.mcp.tool_server", "http", "{port}"]
    yield from servers.serve(command)


@pytest.fixture(scope="session")
def everything_http() -> Iterator[str]:
    yield from servers.serve(["node", str(servers.EVERYTHING), "streamableHttp"])


@pytest.fixture(scope="session")
def garbage_url() -> Iterator[str]:
    yield from servers.garbage_server()


@pytest.fixture(scope="session")
def hanging_url() -> Iterator[str]:
    yield from servers.hanging_server()


@pytest.fixture(autouse=True, scope="module")
def _fresh_tools_loop() -> Iterator[None]:
    yield
    thread.stop()
    catalog.forget()
