"""Pooled Streamable HTTP sessions (`chat.tools.mcp.pool`): several calls
in one session (the server sees one `initialize`: one session id), one
session per user's headers, the idle expiry and the size cap, and a server
that restarted (it forgets the session: 404) met with a fresh session."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import httpx
import pytest
from django.test import override_settings

from chat.tools.mcp import McpTools, Reachable, offer, thread
from chat.tools.mcp.pool import pool
from tests.support.services.daphnes import free_port
from tests.support.waiting import until
from tests.tools.mcp import servers
from tests.tools.mcp.servers import call

pytestmark = pytest.mark.timeout(120)

COMMAND = [sys.executable, "-m", "tests.tools.mcp.tool_server", "http", "{port}"]


@pytest.fixture(autouse=True)
def _empty_pool() -> Iterator[None]:
    yield
    thread.stop()  # closes the pool's sessions; the next test starts afresh


async def sessions(tools: McpTools, calls: int) -> list[str]:
    """The session id each of `calls` calls came in."""
    found = []
    for _ in range(calls):
        outcome = await call(tools, "ours__session")
        assert outcome.ok and outcome.text != "none", outcome
        found.append(outcome.text)
    return found


async def test_calls_share_one_session(our_http: str) -> None:
    tools = await offer([Reachable(servers.config(21, "ours", url=our_http), {})])
    seen = await sessions(tools, 4)
    assert len(set(seen)) == 1 and seen[0] != "none"


async def test_without_a_pool_each_call_has_its_own_session(our_http: str) -> None:
    with override_settings(MCP_HTTP_POOL_SIZE=0):
        tools = await offer([Reachable(servers.config(22, "ours", url=our_http), {})])
        seen = await sessions(tools, 3)
    assert len(set(seen)) == 3


async def test_each_users_headers_have_their_own_session(our_http: str) -> None:
    config = servers.config(23, "ours", url=our_http)
    alice = await offer([Reachable(config, {"X-Tool-Token": "alice"})])
    bob = await offer([Reachable(config, {"X-Tool-Token": "bob"})])
    assert (await call(alice, "ours__whoami")).text == "token: alice"
    assert (await call(bob, "ours__whoami")).text == "token: bob"
    assert set(await sessions(alice, 2)).isdisjoint(await sessions(bob, 2))


async def test_at_most_the_cap_is_kept(our_http: str) -> None:
    config = servers.config(24, "ours", url=our_http)
    with override_settings(MCP_HTTP_POOL_SIZE=1):
        alice = await offer([Reachable(config, {"X-Tool-Token": "alice"})])
        bob = await offer([Reachable(config, {"X-Tool-Token": "bob"})])
        [first] = await sessions(alice, 1)
        await sessions(bob, 1)  # alice's session is closed to keep bob's
        assert sum(map(len, pool.unused.values())) == 1
        [again] = await sessions(alice, 1)
    assert again != first


async def test_an_unused_session_expires(our_http: str) -> None:
    with override_settings(MCP_HTTP_IDLE_SECONDS=1):
        tools = await offer([Reachable(servers.config(25, "ours", url=our_http), {})])
        [first] = await sessions(tools, 1)
        await until(lambda: not pool.unused, "the session expired", timeout=10)
        [second] = await sessions(tools, 1)
    assert second != first


class Restartable:
    """Our server on a port of its own, stopped and started again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.serving: Iterator[str] | None = None

    def start(self) -> str:
        self.serving = servers.serve(COMMAND, port=self.port)
        return next(self.serving)

    def stop(self) -> None:
        if self.serving is not None:
            self.serving.close()  # type: ignore[attr-defined]


@pytest.fixture
def restartable() -> Iterator[Restartable]:
    server = Restartable()
    yield server
    server.stop()


async def test_a_server_that_restarted_is_met_with_a_new_session(
    restartable: Restartable,
) -> None:
    url = await asyncio.to_thread(restartable.start)
    tools = await offer([Reachable(servers.config(26, "ours", url=url), {})])
    [before] = await sessions(tools, 1)
    assert pool.unused  # kept for the next call
    await asyncio.to_thread(restartable.stop)
    await asyncio.to_thread(restartable.start)  # knows no session
    [after] = await sessions(tools, 1)
    assert after not in ("none", before)
    assert (await call(tools, "ours__add", a=1, b=2)).text == "3"


async def test_a_session_the_server_forgot_is_replaced(our_http: str) -> None:
    tools = await offer([Reachable(servers.config(27, "ours", url=our_http), {})])
    [before] = await sessions(tools, 1)
    # The server ends the session (as on its own idle expiry): it answers
    # 404 for its id from now on, while our side still holds it.
    async with httpx.AsyncClient() as client:
        ended = await client.delete(our_http, headers={"mcp-session-id": before})
    assert ended.status_code == 200
    [after] = await sessions(tools, 1)
    assert after not in ("none", before)
