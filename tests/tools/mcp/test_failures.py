"""What a call gives when the server or the model does wrong (issue 42's
"Bad input" for MCP): a server down, hanging, answering garbage or 50 MB,
dying mid-call; an unknown tool, arguments that fail the tool's JSON Schema.
Each is an `Outcome` with its error, never an exception; a cancellation
propagates."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from django.test import override_settings

from chat.tools.calls import ToolCall, ToolSpec
from chat.tools.mcp import McpTools, Reachable, offer
from tests.support.services.daphnes import free_port
from tests.tools.mcp import servers
from tests.tools.mcp.servers import call

pytestmark = pytest.mark.timeout(120)


def elsewhere(tools: McpTools, server: Reachable) -> McpTools:
    """The same offering, its calls sent to `server` (which could not list
    tools itself: down, hanging, garbage)."""
    for name, (there, listed) in tools._runs.items():
        moved = replace(server.config, pk=there.config.pk)
        tools._runs[name] = (Reachable(moved, server.headers), listed)
    return tools


@pytest.fixture
async def ours(our_http: str) -> McpTools:
    return await offer(
        [Reachable(servers.config(1, "ours", url=our_http, timeout=5), {})]
    )


async def test_a_server_that_is_down_is_left_out_and_its_calls_fail_at_once(
    ours: McpTools,
) -> None:
    down = servers.config(
        7, "down", url=f"http://127.0.0.1:{free_port()}/mcp", timeout=20
    )
    started = time.monotonic()
    tools = await offer([Reachable(down, {})])
    assert tools.specs == []
    assert "could not be reached" in tools.unavailable["down"]
    outcome = await call(elsewhere(ours, Reachable(down, {})), "ours__echo", text="hi")
    assert not outcome.ok and "could not be reached" in (outcome.error or "")
    assert time.monotonic() - started < 10  # not the 20 s timeout


async def test_a_stdio_command_that_cannot_start_is_left_out() -> None:
    missing = servers.stdio(8, "missing", ("/nonexistent/mcp-server", ()))
    tools = await offer([Reachable(missing, {})])
    assert tools.specs == []
    assert "could not be started" in tools.unavailable["missing"]


async def test_a_server_that_hangs_fails_after_its_timeout(
    ours: McpTools, hanging_url: str
) -> None:
    hanging = Reachable(servers.config(9, "hangs", url=hanging_url, timeout=1), {})
    started = time.monotonic()
    tools = await offer([hanging])
    assert tools.unavailable["hangs"] == "the server did not answer within 1 s"
    outcome = await call(elsewhere(ours, hanging), "ours__echo", text="hi")
    assert outcome.error == "the server did not answer within 1 s"
    assert time.monotonic() - started < 8


async def test_a_slow_tool_fails_at_the_deadline_of_the_turn(ours: McpTools) -> None:
    outcome = await call(ours, "ours__slow", deadline=0.5, seconds=10)
    assert outcome.error == "the server did not answer within 0.5 s"
    assert outcome.text == "Error: the server did not answer within 0.5 s"
    # and the server's own timeout, when it is the shorter (5 s here)
    outcome = await call(ours, "ours__slow", deadline=60, seconds=10)
    assert outcome.error == "the server did not answer within 5 s"


async def test_a_server_answering_garbage_gives_an_error(
    ours: McpTools, garbage_url: str
) -> None:
    garbage = Reachable(servers.config(10, "garbage", url=garbage_url, timeout=5), {})
    tools = await offer([garbage])
    assert tools.specs == [] and tools.unavailable["garbage"]
    outcome = await call(elsewhere(ours, garbage), "ours__echo", text="hi")
    assert not outcome.ok and outcome.error


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_50_mb_result_is_cut_with_a_note(
    transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "http":
        config = servers.config(1, "ours", url=request.getfixturevalue("our_http"))
    else:
        config = servers.stdio(2, "ours", servers.OUR_STDIO)
    tools = await offer([Reachable(config, {})])
    with override_settings(TOOL_RESULT_MAX_CHARS=20000):
        outcome = await call(tools, "ours__huge", chars=50_000_000)
    assert outcome.ok and outcome.cut
    assert outcome.size == 50_000_000
    assert outcome.text.startswith("x" * 20000 + "\n\n[Cut: the result has 50000000")
    assert len(outcome.text) < 20100 and len(outcome.preview) == 300


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_message_over_the_byte_limit_fails_unread(
    transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "http":
        config = servers.config(1, "ours", url=request.getfixturevalue("our_http"))
    else:
        config = servers.stdio(3, "capped", servers.OUR_STDIO)
    with override_settings(MCP_MESSAGE_MAX_BYTES=1_000_000):
        tools = await offer([Reachable(config, {})])
        name = f"{config.slug}__huge"
        outcome = await call(tools, name, chars=2_000_000)
        assert not outcome.ok
        # and the server is still there for the next call (stdio: a new process)
        assert (await call(tools, name, chars=10)).text == "xxxxxxxEND"


async def test_a_stdio_server_that_dies_mid_call_is_started_again() -> None:
    tools = await offer([Reachable(servers.stdio(4, "dies", servers.OUR_STDIO), {})])
    outcome = await call(tools, "dies__crash")
    assert not outcome.ok and "Connection closed" in (outcome.error or "")
    assert (await call(tools, "dies__add", a=1, b=2)).text == "3"


async def test_an_unknown_tool_is_an_error_for_the_model(ours: McpTools) -> None:
    spec = ToolSpec("ours__nope", "mcp:1", "nope", "nope", "", {})
    outcome = await ours.run(spec, ToolCall("c1", "ours__nope", "{}"), deadline=5)
    assert outcome.error == "there is no tool named 'ours__nope' here"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            '{"a": "two", "b": 2}',
            "a do not fit the tool's schema: 'two' is not of type 'integer'",
        ),
        (
            '{"a": 2}',
            "the arguments do not fit the tool's schema: 'b' is a required property",
        ),
        (
            '{"a": 2, "b":',
            "the arguments are not JSON (Expecting value: line 1 column 14 (char 13))",
        ),
        ("[1, 2]", "the arguments must be a JSON object"),
    ],
)
async def test_arguments_that_fail_the_schema_are_not_sent(
    ours: McpTools, arguments: str, error: str
) -> None:
    spec = next(spec for spec in ours.specs if spec.name == "ours__add")
    outcome = await ours.run(spec, ToolCall("c1", spec.name, arguments), deadline=5)
    assert outcome.error == error
    assert outcome.text == f"Error: {error}"


async def test_a_cancelled_run_raises_and_cancels_the_call(ours: McpTools) -> None:
    run = asyncio.create_task(call(ours, "ours__slow", seconds=10))
    await asyncio.sleep(0.5)  # the call is on its way to the server
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
