"""Calls through the MCP client seam (`chat.tools.mcp`) to our own MCP server,
over Streamable HTTP and over stdio: what is offered, what a call gives."""

from __future__ import annotations

import json

import pytest

from chat.tools.calls import ToolCall
from chat.tools.mcp import McpTools, Reachable, offer
from tests.tools.mcp import servers

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["http", "stdio"])
def ours(request: pytest.FixtureRequest) -> Reachable:
    """Our server as one user reaches it: with their token in X-Tool-Token."""
    if request.param == "http":
        url = request.getfixturevalue("our_http")
        config = servers.config(1, "ours", url=url)
    else:
        config = servers.stdio(2, "ours", servers.OUR_STDIO)
    return Reachable(config, {"X-Tool-Token": "alices-token"})


async def call(tools: McpTools, name: str, **arguments: object):
    spec = next(spec for spec in tools.specs if spec.name == name)
    return await tools.run(
        spec, ToolCall("c1", name, json.dumps(arguments)), deadline=30
    )


async def test_the_tools_offered_are_named_for_their_server(ours: Reachable) -> None:
    tools = await offer([ours])
    names = {spec.name for spec in tools.specs}
    assert {"ours__echo", "ours__add", "ours__slow", "ours__huge"} <= names
    add = next(spec for spec in tools.specs if spec.name == "ours__add")
    assert (add.source, add.tool) == (ours.config.source, "add")
    assert add.parameters["required"] == ["a", "b"]
    assert add.offered()["function"]["name"] == "ours__add"
    assert not add.needs_approval


async def test_a_call_gives_the_tools_text(ours: Reachable) -> None:
    tools = await offer([ours])
    outcome = await call(tools, "ours__add", a=2, b=40)
    assert (outcome.ok, outcome.text, outcome.size, outcome.cut) == (
        True,
        "42",
        2,
        False,
    )
    echoed = await call(tools, "ours__echo", text="<b>hi</b>")
    assert echoed.text == echoed.preview == "<b>hi</b>"


async def test_images_and_resources_are_described_not_passed_on(
    ours: Reachable,
) -> None:
    outcome = await call(await offer([ours]), "ours__picture")
    assert outcome.text.startswith("A caption.\n[image: image/png, about 9 bytes")
    assert "iVBORw0KGgo" not in outcome.text
    assert "[resource <file:///notes.txt>]\nnotes" in outcome.text


async def test_the_users_token_goes_with_their_calls_over_http(our_http: str) -> None:
    config = servers.config(1, "ours", url=our_http)
    with_token = await offer([Reachable(config, {"X-Tool-Token": "alices-token"})])
    assert (await call(with_token, "ours__whoami")).text == "token: alices-token"
    without = await offer([Reachable(config, {})])
    assert (await call(without, "ours__whoami")).text == "no token"


async def test_a_tool_error_is_an_outcome_with_the_error(ours: Reachable) -> None:
    outcome = await call(await offer([ours]), "ours__fails")
    assert not outcome.ok
    assert outcome.text.startswith("Error: ")
    assert "fails" in (outcome.error or "")


async def test_a_tool_that_needs_approval_says_so() -> None:
    config = servers.stdio(
        2, "ours", servers.OUR_STDIO, tools_needing_approval=frozenset({"echo"})
    )
    tools = await offer([Reachable(config, {})])
    approval = {spec.tool: spec.needs_approval for spec in tools.specs}
    assert approval["echo"] and not approval["add"]
