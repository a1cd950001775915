"""A large result over both transports is parsed and cut in a worker
process, under its budget (`MCP_PARSE_SECONDS`, `MCP_PARSE_MEMORY`): a
budget too small for it fails the call; the same result under
`MCP_LARGE_MESSAGE_BYTES` never meets that budget. (How long the caller's
loop stalls meanwhile is measured by `python -m bench.tools`.)"""

from __future__ import annotations

import pytest
from django.test import override_settings

from chat.tools.mcp import McpTools, Reachable, offer
from tests.tools.mcp import servers
from tests.tools.mcp.servers import call

pytestmark = pytest.mark.timeout(120)

CHARS = 5_000_000
# Not enough to hold a 5 MB message in a worker, let alone parse it.
NO_MEMORY = {"MCP_PARSE_MEMORY": 1024 * 1024}


@pytest.fixture(params=["http", "stdio"])
async def tools(request: pytest.FixtureRequest) -> McpTools:
    if request.param == "http":
        config = servers.config(1, "big", url=request.getfixturevalue("our_http"))
    else:
        config = servers.stdio(11, "big", servers.OUR_STDIO)
    return await offer([Reachable(config, {})])


async def test_a_large_result_is_cut_in_a_worker_within_its_budget(
    tools: McpTools,
) -> None:
    with override_settings(TOOL_RESULT_MAX_CHARS=1000):
        outcome = await call(tools, "big__huge", chars=CHARS)
    assert outcome.ok and outcome.cut and outcome.size == CHARS
    assert outcome.text.startswith("x" * 1000 + f"\n\n[Cut: the result has {CHARS}")


async def test_a_worker_over_its_budget_fails_the_call_and_the_next_goes_on(
    tools: McpTools,
) -> None:
    with override_settings(**NO_MEMORY):
        outcome = await call(tools, "big__huge", chars=CHARS)
        assert not outcome.ok
        assert (await call(tools, "big__huge", chars=10)).text == "xxxxxxxEND"


async def test_the_worker_explains_over_http(our_http: str) -> None:
    config = servers.config(1, "big", url=our_http)
    tools = await offer([Reachable(config, {})])
    with override_settings(**NO_MEMORY):
        outcome = await call(tools, "big__huge", chars=CHARS)
    assert outcome.error is not None
    assert outcome.error.startswith("the server answered with an error: its answer")
    assert "could not be read: It is too large to read" in outcome.error


async def test_a_message_under_the_threshold_is_parsed_here(
    tools: McpTools,
) -> None:
    with override_settings(MCP_LARGE_MESSAGE_BYTES=CHARS * 3, **NO_MEMORY):
        outcome = await call(tools, "big__huge", chars=CHARS)
    assert outcome.ok and outcome.cut and outcome.size == CHARS
