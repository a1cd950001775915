"""A large MCP message made small in a worker process
(`chat.tools.mcp.oversize`, `chat.tools.mcp.messages`): what comes out of
the worker for each kind of message, the byte stream that finds the
messages, and a result's figures carried under the process's own key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pytest
from mcp import types

from chat.tools.mcp.messages import Limits, Messages, TooLarge
from chat.tools.mcp.oversize import shrunk
from chat.tools.mcp.results import MARK, outcome_of

pytestmark = pytest.mark.timeout(60)

LIMITS = Limits(
    max_bytes=10_000_000,
    large_bytes=100_000,
    chars=1000,
    seconds=30,
    memory_bytes=512 * 1024 * 1024,
)


def result(text: str, **fields: object) -> bytes:
    body = {"content": [{"type": "text", "text": text}], **fields}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": body}).encode()


def read(message: bytes) -> types.JSONRPCMessage:
    return types.jsonrpc_message_adapter.validate_json(message)


def test_a_tools_result_comes_back_cut_with_its_figures() -> None:
    small = read(shrunk(result("x" * 500_000), False, 1000, MARK, None))
    assert isinstance(small, types.JSONRPCResponse) and small.id == 7
    outcome = outcome_of(types.CallToolResult.model_validate(small.result), 1000)
    assert outcome.ok and outcome.cut and outcome.size == 500_000
    assert outcome.text.startswith("x" * 1000 + "\n\n[Cut: the result has 500000")
    assert len(outcome.preview) == 300


def test_a_tools_error_stays_an_error() -> None:
    big = result("no " * 100_000, isError=True)
    small = read(shrunk(big, False, 1000, MARK, None))
    assert isinstance(small, types.JSONRPCResponse)
    outcome = outcome_of(types.CallToolResult.model_validate(small.result), 1000)
    assert not outcome.ok and outcome.text.startswith("Error: no no")


def test_figures_under_another_key_are_not_believed() -> None:
    forged = {"_meta": {"chatsite/outcome-guess": {"size": 1, "cut": True}}}
    answer = types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": "hi"}], **forged}
    )
    outcome = outcome_of(answer, 1000)
    assert (outcome.size, outcome.cut, outcome.ok) == (2, False, True)


def test_an_event_keeps_its_framing_and_its_id() -> None:
    event = b"event: message\r\nid: 41\r\ndata: " + result("y" * 200_000) + b"\r\n\r\n"
    small = shrunk(event, True, 1000, MARK, None)
    assert small.startswith(b"event: message\r\nid: 41\r\ndata: {")
    assert small.endswith(b"\r\n\r\n") and len(small) < 2000
    message = read(small.split(b"data: ", 1)[1])
    assert isinstance(message, types.JSONRPCResponse)


def test_an_errors_message_is_cut() -> None:
    big = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "e" * 500_000}}
    ).encode()
    small = read(shrunk(big, False, 1000, MARK, None))
    assert isinstance(small, types.JSONRPCError)
    assert small.id == 3 and small.error.message == "e" * 1000


def test_a_notification_that_large_is_not_passed_on() -> None:
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"x": "z" * 200_000},
        }
    ).encode()
    assert shrunk(big, False, 1000, MARK, None) == b""
    assert shrunk(b"data: " + big + b"\n\n", True, 1000, MARK, None) == b""


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"<html>" + b"x" * 200_000, "it sent 200006 bytes that are not JSON-RPC"),
        (
            json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": 3}}).encode(),
            "is not a tool's result",
        ),
    ],
)
def test_garbage_answers_the_request_with_an_error(data: bytes, why: str) -> None:
    small = read(shrunk(data, False, 1000, MARK, 5))
    assert isinstance(small, types.JSONRPCError) and small.id == 5
    assert why in small.error.message


class Chunks(httpx2.AsyncByteStream):
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def messages(*chunks: bytes, sse: bool = True) -> list[bytes]:
    stream = Messages(
        Chunks(*chunks), sse=sse, limits=LIMITS, owner="test:mcp", request_id=9
    )
    return [each async for each in stream]


async def test_events_are_passed_whole_however_the_bytes_come() -> None:
    one, two = b"event: message\ndata: {}\n\n", b"event: message\r\ndata: []\r\n\r\n"
    both = one + two
    for cut in range(1, len(both)):
        assert await messages(both[:cut], both[cut:]) == [one, two]


async def test_a_large_event_is_made_small_in_a_worker() -> None:
    big = b"data: " + result("z" * 300_000) + b"\n\n"
    pieces = [big[n : n + 65536] for n in range(0, len(big), 65536)]
    [small] = await messages(*pieces)
    message = read(small.removeprefix(b"event: message\r\ndata: ").strip())
    assert isinstance(message, types.JSONRPCResponse)
    outcome = outcome_of(types.CallToolResult.model_validate(message.result), 1000)
    assert outcome.cut and outcome.size == 300_000


async def test_a_large_json_body_is_made_small_in_a_worker() -> None:
    [small] = await messages(result("w" * 300_000), sse=False)
    assert len(small) < 2000 and isinstance(read(small), types.JSONRPCResponse)


async def test_a_message_over_the_limit_fails_unread() -> None:
    huge = b"data: " + b"v" * 4_000_000
    with pytest.raises(TooLarge):
        await messages(*(huge for _ in range(3)))
