"""Tool calls over Ollama's `/api/chat`: the request (`tools`, a tool turn's
history in Ollama's form), the whole calls of `message.tool_calls` and the
reply's end ("stop" made "tool_calls"), and every malformed form (no id, an
id repeated, arguments that are not an object, a call cut mid-stream, a line
over the limit, a tag Ollama's parser left in the text)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from chat.upstream import Delta, ToolCallDelta, UpstreamError
from chat.upstream.ollama import NDJSONDecoder, NDJSONReader
from chat.upstream.outgoing import ollama_messages
from chat.upstream.toolcalls import ToolCalls
from chat.upstream.tooltags import ToolTagSplitter
from tests.upstream.fake_servers import stream_of
from tests.upstream.offered import HISTORY, TOOLS
from tests.upstream.ollama.answering import (
    BASE,
    FINISHED,
    METRICS,
    chunk,
    collect,
    done,
    line,
)

# Ollama says "stop" after calls too: the reply's end says what it asks.
CALLS = dataclasses.replace(FINISHED, done_reason="tool_calls")


def called(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """A chunk with whole calls, as Ollama streams them (docs.ollama.com,
    "Tool calling": one chunk with `tool_calls`, `content` empty)."""
    message = {"role": "assistant", "content": content, "tool_calls": list(calls)}
    return {"model": "qwen3:8b", "message": message, "done": False}


def call(name: str, arguments: Any, id: str | None = None, index: int = 0) -> dict:
    entry: dict[str, Any] = {
        "function": {"index": index, "name": name, "arguments": arguments}
    }
    if id is not None:
        entry["id"] = id
    return entry


def decode(reads: list[bytes], max_line: int | None = None) -> tuple[list, Any]:
    reader = NDJSONReader(BASE, ToolTagSplitter(ToolCalls(), None))
    if max_line is not None:
        reader.decoder = NDJSONDecoder(max_line=max_line)
    events: list[Any] = []
    for data in reads:
        try:
            got, error = reader.feed(data)
        except UpstreamError as raised:  # the decoder's own refusal
            return events, raised
        events += got
        if error is not None or reader.finished:
            return events, error
    got, error = reader.close()
    return events + got, error


# --- the request -------------------------------------------------------------

# docs.ollama.com "Tool calling": the calls' arguments an object, the tool's
# name in `tool_name` (and the id, which Ollama >= 0.12 reads and older ignore).
TOOL, NOT_JSON = "get_weather", "The arguments are not JSON."
OLLAMA_HISTORY = [
    HISTORY[0],
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "index": 0,
                    "name": "get_weather",
                    "arguments": {"city": "Paris"},
                },
            },
            {
                "id": "call_2",
                "type": "function",
                # Not JSON (the engine told the model): Ollama takes objects only.
                "function": {"index": 1, "name": "get_weather", "arguments": {}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "9C", "tool_name": TOOL},
    {"role": "tool", "tool_call_id": "call_2", "content": NOT_JSON, "tool_name": TOOL},
]


async def test_tools_and_the_history_are_sent_in_ollamas_form(make_client):
    server = stream_of(line(done(**METRICS)))
    client = make_client(server)
    async for _ in client.chat(
        "qwen3:8b", HISTORY, think=None, options={}, tools=TOOLS, tool_choice="auto"
    ):
        pass
    assert server.body["tools"] == TOOLS
    assert "tool_choice" not in server.body  # Ollama has none
    assert server.body["messages"] == OLLAMA_HISTORY


async def test_tool_choice_none_offers_no_tools(make_client):
    server = stream_of(line(called(call("get_weather", {}))), line(done(**METRICS)))
    batches = await collect(make_client(server), tools=TOOLS, tool_choice="none")
    assert "tools" not in server.body
    assert batches == [[FINISHED]]


async def test_a_plain_history_is_sent_as_it_is():
    plain = [{"role": "user", "content": "hi"}]
    assert ollama_messages(plain) is plain


# --- the reply -----------------------------------------------------------------


async def test_calls_are_read_and_the_reply_ends_with_tool_calls(make_client):
    server = stream_of(
        line(chunk("", "The user wants the weather.")),
        line(called(call("get_weather", {"city": "Paris"}, "call_x"))),
        line(done(**METRICS)),
    )
    batches = await collect(make_client(server), tools=TOOLS)
    assert batches == [
        [Delta("thinking", "The user wants the weather.")],
        [ToolCallDelta(0, "call_x", "get_weather", '{"city": "Paris"}')],
        [CALLS],
    ]


async def test_calls_without_tools_offered_are_not_read(make_client):
    # The plain text path does no tool work.
    server = stream_of(line(called(call("f", {}))), line(done(**METRICS)))
    assert await collect(make_client(server)) == [[FINISHED]]


ODD_REPLIES = {
    "no ids (Ollama before 0.12): made up, one per call": (
        [called(call("f", {"a": 1}), call("g", {}, index=1)), done(**METRICS)],
        [
            ToolCallDelta(0, "call_0", "f", '{"a": 1}'),
            ToolCallDelta(1, "call_1", "g", "{}"),
        ],
    ),
    "calls over several chunks, the last in the done chunk": (
        [
            called(call("f", {}, "a")),
            {**done(**METRICS), "message": called(call("g", {}, "b"))["message"]},
        ],
        [ToolCallDelta(0, "a", "f", "{}"), ToolCallDelta(1, "b", "g", "{}")],
    ),
    "an id repeated: the call once": (
        [called(call("f", {}, "a")), called(call("f", {}, "a")), done(**METRICS)],
        [ToolCallDelta(0, "a", "f", "{}")],
    ),
    "arguments as text, missing, or not an object": (
        [
            called(call("f", '{"a": 1}'), call("g", None), call("h", [1])),
            done(**METRICS),
        ],
        [
            ToolCallDelta(0, "call_0", "f", '{"a": 1}'),
            ToolCallDelta(1, "call_1", "g", "{}"),
            ToolCallDelta(2, "call_2", "h", "[1]"),
        ],
    ),
    "garbage in tool_calls is skipped": (
        [called("x", 1, None), done(**METRICS)],
        [],
    ),
    "text and a call in one chunk: the text first": (
        [called(call("f", {}, "a"), content="Looking."), done(**METRICS)],
        [Delta("content", "Looking."), ToolCallDelta(0, "a", "f", "{}")],
    ),
    "a tag Ollama's parser left in the text": (
        [
            chunk('<tool_call>{"name": "f", "argu'),
            chunk('ments": {"a": 1}}</tool_call>'),
            done(**METRICS),
        ],
        [
            ToolCallDelta(0, "call_0", "f", ""),
            ToolCallDelta(0, arguments='{"a": 1}'),
        ],
    ),
}


@pytest.mark.parametrize(
    ("chunks", "expected"), ODD_REPLIES.values(), ids=ODD_REPLIES.keys()
)
def test_odd_replies(chunks, expected):
    events, error = decode([b"".join(line(c) for c in chunks)])
    assert error is None
    has_calls = any(isinstance(e, ToolCallDelta) for e in expected)
    assert events == [*expected, CALLS if has_calls else FINISHED]


def test_a_length_limit_keeps_its_reason():
    events, _ = decode(
        [
            line(called(call("f", {}))),
            line(done(**{**METRICS, "done_reason": "length"})),
        ]
    )
    assert events[-1] == dataclasses.replace(FINISHED, done_reason="length")


def test_a_cut_mid_stream_keeps_the_calls_before_it():
    body = line(called(call("f", {"a": 1}, "a"))) + line(called(call("g", {})))[:30]
    events, error = decode([body])
    assert events == [ToolCallDelta(0, "a", "f", '{"a": 1}')]
    assert error is not None and error.code == "stream_cut"


def test_a_call_over_the_line_limit_is_refused():
    huge = line(called(call("f", {"text": "x" * 1_500_000})))
    reads = [huge[i : i + 65536] for i in range(0, len(huge), 65536)]
    events, error = decode(reads, max_line=1024 * 1024)
    assert events == []
    assert error is not None and error.code == "malformed"
    assert "longer than 1 MiB" in error.detail


def test_a_large_call_under_the_limit_arrives_whole():
    arguments = {"text": "é" * 1_000_000}
    huge = line(called(call("f", arguments, "a"))) + line(done(**METRICS))
    events, error = decode([huge[i : i + 65536] for i in range(0, len(huge), 65536)])
    assert error is None
    assert json.loads(events[0].arguments) == arguments
    assert events[-1] == CALLS
