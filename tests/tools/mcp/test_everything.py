"""The MCP reference server (`@modelcontextprotocol/server-everything`, from
the npm registry: scripts/ensure-mcp-everything.sh) over stdio and
Streamable HTTP, through the client seam (`chat.tools.mcp`)."""

from __future__ import annotations

import json

import pytest

from chat.tools.calls import ToolCall
from chat.tools.mcp import McpTools, Reachable, offer
from tests.tools.mcp import servers

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(params=["http", "stdio"])
async def everything(request: pytest.FixtureRequest) -> McpTools:
    if request.param == "http":
        url = request.getfixturevalue("everything_http")
        config = servers.config(21, "everything", url=url)
    else:
        config = servers.stdio(22, "everything", servers.EVERYTHING_STDIO)
    return await offer([Reachable(config, {})])


async def call(tools: McpTools, name: str, arguments: str):
    spec = next(spec for spec in tools.specs if spec.name == name)
    return await tools.run(spec, ToolCall("c1", name, arguments), deadline=30)


async def test_its_tools_are_offered_with_model_safe_names(
    everything: McpTools,
) -> None:
    names = {spec.name for spec in everything.specs}
    assert {
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
    } <= names
    assert all(len(name) <= 64 for name in names)


async def test_echo_and_sum(everything: McpTools) -> None:
    echoed = await call(everything, "everything__echo", json.dumps({"message": "hi"}))
    assert (echoed.ok, echoed.text) == (True, "Echo: hi")
    summed = await call(everything, "everything__get-sum", '{"a": 2, "b": 3}')
    assert summed.text == "The sum of 2 and 3 is 5."


async def test_its_image_is_described(everything: McpTools) -> None:
    outcome = await call(everything, "everything__get-tiny-image", "{}")
    lines = outcome.text.splitlines()
    assert lines[0] == "Here's the image you requested:"
    assert lines[1].startswith("[image: image/png, about ")
    assert lines[2] == "The image above is the MCP logo."


async def test_its_schema_is_checked_before_the_call(everything: McpTools) -> None:
    outcome = await call(everything, "everything__get-sum", '{"a": "two", "b": 3}')
    assert (
        outcome.error == "a do not fit the tool's schema: 'two' is not of type 'number'"
    )
