"""Tool calls over the OpenAI-compatible stream: the request (`tools`,
`tool_choice`, a tool turn's history passed through), the streamed
`delta.tool_calls` of vLLM, llama.cpp and the servers that send a call whole,
and every malformed form (an id repeated, index gaps, no index, arguments that
are not JSON, a call cut mid-stream, an event over the limit)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat.upstream import Delta, Finished, ToolCallDelta
from chat.upstream.openai import StreamReader
from chat.upstream.sse import SSEDecoder
from chat.upstream.thinktags import ThinkTagSplitter
from chat.upstream.toolcalls import ToolCalls
from chat.upstream.tooltags import ToolTagSplitter
from tests.upstream.fake_servers import stream_of
from tests.upstream.offered import HISTORY, TOOLS
from tests.upstream.openai.answering import (
    BASE,
    DONE,
    MODEL,
    USAGE,
    chunk,
    collect,
    collect_until_error,
    event,
)

CALLS = Finished(done_reason="tool_calls")


def piece(index: int | None = 0, id: str | None = None, **function: Any) -> dict:
    """One `delta.tool_calls` entry."""
    entry: dict[str, Any] = {"function": function}
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry["id"] = id
        entry["type"] = "function"
    return entry


def calls(*pieces: dict, finish: str | None = None) -> bytes:
    return event(chunk(finish, tool_calls=list(pieces)))


def decode(
    reads: list[bytes], *, think: ThinkTagSplitter | None = None, max_event=None
) -> tuple[list[Any], Any, StreamReader]:
    """The events of a body read in `reads` by a reader of a reply offered tools."""
    tools = ToolCalls()
    reader = StreamReader(BASE, ToolTagSplitter(tools, think), tools)
    if max_event is not None:
        reader.decoder = SSEDecoder(max_event=max_event)
    events: list[Any] = []
    for data in reads:
        got, error = reader.feed(data)
        events += got
        if error is not None or reader.finished:
            return events, error, reader
    got, error = reader.close()
    return events + got, error, reader


def arguments(events: list[Any], index: int = 0) -> str:
    return "".join(
        e.arguments for e in events if isinstance(e, ToolCallDelta) and e.index == index
    )


# --- the request -------------------------------------------------------------


async def test_tools_and_tool_choice_are_sent_and_the_history_passed_through(
    make_client,
):
    server = stream_of(DONE)
    client = make_client(server)
    async for _ in client.chat(
        MODEL, HISTORY, think=None, options={}, tools=TOOLS, tool_choice="auto"
    ):
        pass
    body = server.body
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == "auto"
    assert body["messages"] == HISTORY


async def test_no_tools_sends_neither_field(make_client):
    server = stream_of(DONE)
    await collect(make_client(server), tools=[], tool_choice="auto")
    assert "tools" not in server.body and "tool_choice" not in server.body


async def test_tool_calls_without_tools_offered_are_not_read(make_client):
    # The plain text path does no tool work: a stray piece is not an event.
    reads = [calls(piece(id="c", name="get_weather", arguments="{}")), DONE]
    batches = await collect(make_client(stream_of(*reads)))
    assert batches == [[Finished(done_reason="")]]


# --- the streams of real servers -----------------------------------------------

# vLLM with `--tool-call-parser hermes`: the role chunk, the name with the id,
# the arguments in pieces, "tool_calls" on an empty delta, then usage.
VLLM = [
    event(chunk(role="assistant", content="")),
    calls(piece(id="chatcmpl-tool-5d1b", name="get_weather")),
    calls(piece(arguments='{"city": "')),
    calls(piece(arguments="Paris")),
    calls(piece(arguments='"}')),
    event(chunk("tool_calls", content="")),
    event({**chunk(), "choices": [], "usage": USAGE}),
    DONE,
]
# llama.cpp `--jinja`: the first piece has the name and the arguments' start.
LLAMA_CPP = [
    event(chunk(role="assistant", content=None)),
    calls(piece(id="aBcD12", name="get_weather", arguments='{"')),
    calls(piece(arguments='city":"')),
    calls(piece(arguments='Paris"}')),
    event(chunk("tool_calls")),
    DONE,
]
# Ollama's /v1 and LM Studio: each call whole in one delta.
WHOLE = [
    calls(piece(0, "call_a", name="get_weather", arguments='{"city":"Paris"}')),
    calls(piece(1, "call_b", name="get_weather", arguments='{"city":"Oslo"}')),
    event(chunk("tool_calls", content="")),
    DONE,
]


def test_vllm_stream():
    events, error, _ = decode(VLLM)
    assert error is None
    assert events == [
        ToolCallDelta(0, "chatcmpl-tool-5d1b", "get_weather", ""),
        ToolCallDelta(0, arguments='{"city": "'),
        ToolCallDelta(0, arguments="Paris"),
        ToolCallDelta(0, arguments='"}'),
        Finished("tool_calls", prompt_tokens=26, output_tokens=282),
    ]


def test_llama_cpp_stream():
    events, error, _ = decode(LLAMA_CPP)
    assert error is None
    assert events[0] == ToolCallDelta(0, "aBcD12", "get_weather", '{"')
    assert arguments(events) == '{"city":"Paris"}'
    assert events[-1] == CALLS


def test_whole_calls_in_one_delta_each():
    events, _, _ = decode(WHOLE)
    assert events == [
        ToolCallDelta(0, "call_a", "get_weather", '{"city":"Paris"}'),
        ToolCallDelta(1, "call_b", "get_weather", '{"city":"Oslo"}'),
        CALLS,
    ]


async def test_the_client_yields_the_calls_per_read(make_client):
    batches = await collect(make_client(stream_of(*LLAMA_CPP)), tools=TOOLS)
    assert batches[0] == [ToolCallDelta(0, "aBcD12", "get_weather", '{"')]
    assert batches[-1] == [CALLS]


# --- what servers get wrong -----------------------------------------------------

# The end of a reply that asks for tools.
FINISH = [event(chunk("tool_calls")), DONE]
# The reads of a stream and its events (ending with CALLS unless they say).
ODD_STREAMS = {
    "id and name repeated in every piece (LM Studio)": (
        [
            calls(piece(0, "c1", name="get_weather", arguments='{"city":')),
            calls(piece(0, "c1", name="get_weather", arguments='"Paris"}')),
            *FINISH,
        ],
        [
            ToolCallDelta(0, "c1", "get_weather", '{"city":'),
            ToolCallDelta(0, arguments='"Paris"}'),
        ],
    ),
    "index gaps: calls numbered as they begin": (
        [
            calls(piece(0, "a", name="f", arguments="{}")),
            calls(piece(2, "b", name="g", arguments="{")),
            calls(piece(2, arguments="}")),
            *FINISH,
        ],
        [
            ToolCallDelta(0, "a", "f", "{}"),
            ToolCallDelta(1, "b", "g", "{"),
            ToolCallDelta(1, arguments="}"),
        ],
    ),
    "every whole call at index 0": (
        [
            calls(piece(0, "a", name="f", arguments="{}")),
            calls(piece(0, "b", name="g", arguments="{}")),
            *FINISH,
        ],
        [ToolCallDelta(0, "a", "f", "{}"), ToolCallDelta(1, "b", "g", "{}")],
    ),
    "no index: by id, then the last call": (
        [
            calls(piece(None, "a", name="f", arguments='{"x"')),
            calls(piece(None, arguments=":1}")),
            calls(piece(None, "b", name="g")),
            calls(piece(None, "a", arguments="")),
            *FINISH,
        ],
        [
            ToolCallDelta(0, "a", "f", '{"x"'),
            ToolCallDelta(0, arguments=":1}"),
            ToolCallDelta(1, "b", "g", ""),
        ],
    ),
    "no index, no id: ids made up, a new name is a new call": (
        [
            calls(piece(None, name="f", arguments="{}")),
            calls(piece(None, name="g", arguments="{")),
            calls(piece(None, arguments="}")),
            DONE,
        ],
        [
            ToolCallDelta(0, "call_0", "f", "{}"),
            ToolCallDelta(1, "call_1", "g", "{"),
            ToolCallDelta(1, arguments="}"),
        ],
    ),
    "arguments before the name: held until it comes": (
        [
            calls(piece(0, arguments='{"a":')),
            calls(piece(0, "x", name="f", arguments="1}")),
            event(chunk("stop")),
            DONE,
        ],
        [ToolCallDelta(0, "x", "f", '{"a":1}')],
    ),
    "a name that never comes: the text still reaches the engine": (
        [calls(piece(0, arguments='{"a":1}')), *FINISH],
        [ToolCallDelta(0, "call_0", "", '{"a":1}')],
    ),
    "arguments as an object, not text": (
        [calls(piece(0, "x", name="f", arguments={"a": "é"})), DONE],
        [ToolCallDelta(0, "x", "f", '{"a": "é"}')],
    ),
    "arguments that are not JSON are passed on as written": (
        [calls(piece(0, "x", name="f", arguments="city=Paris")), DONE],
        [ToolCallDelta(0, "x", "f", "city=Paris")],
    ),
    "finish_reason stop after calls (older llama.cpp)": (
        [calls(piece(0, "x", name="f", arguments="{}")), event(chunk("stop")), DONE],
        [ToolCallDelta(0, "x", "f", "{}")],
    ),
    "finish_reason length keeps its reason (the call was cut)": (
        [calls(piece(0, "x", name="f", arguments='{"a":')), event(chunk("length"))],
        [ToolCallDelta(0, "x", "f", '{"a":'), Finished(done_reason="length")],
    ),
    "garbage in tool_calls is skipped": (
        [
            event(chunk(tool_calls="nope")),
            event(chunk(tool_calls=[1, None, {"function": "x"}])),
            event(chunk("stop", content="Hi")),
            DONE,
        ],
        [Delta("content", "Hi"), Finished(done_reason="stop")],
    ),
    "text before the call": (
        [
            event(chunk(content="Let me look.")),
            calls(piece(0, "x", name="f", arguments="{}")),
            DONE,
        ],
        [Delta("content", "Let me look."), ToolCallDelta(0, "x", "f", "{}")],
    ),
    "no calls: the reason stays": (
        [event(chunk("stop", content="Hi")), DONE],
        [Delta("content", "Hi"), Finished(done_reason="stop")],
    ),
}


@pytest.mark.parametrize(
    ("reads", "expected"), ODD_STREAMS.values(), ids=ODD_STREAMS.keys()
)
def test_odd_streams(reads, expected):
    events, error, _ = decode(reads)
    assert error is None
    if not isinstance(expected[-1], Finished):
        expected = [*expected, CALLS]  # a reply that asked for tools
    assert events == expected


def test_a_call_cut_mid_stream_is_kept_and_the_cut_reported():
    events, error, _ = decode(
        [calls(piece(0, "x", name="f", arguments='{"city": "Par'))]
    )
    assert events == [ToolCallDelta(0, "x", "f", '{"city": "Par')]
    assert error is not None and error.code == "stream_cut"


async def test_the_client_raises_the_cut_after_the_calls(make_client):
    server = stream_of(calls(piece(0, "x", name="f", arguments='{"a"')))
    batches, error = await collect_until_error(make_client(server), tools=TOOLS)
    assert batches == [[ToolCallDelta(0, "x", "f", '{"a"')]]
    assert error.code == "stream_cut"


def test_huge_arguments_over_the_event_limit_are_refused():
    huge = calls(piece(0, "x", name="f", arguments=json.dumps({"a": "x" * 5000})))
    reads = [huge[i : i + 1000] for i in range(0, len(huge), 1000)]
    events, error, _ = decode(reads, max_event=4096)
    assert events == []
    assert error is not None and error.code == "malformed"
    assert "longer than" in error.detail


def test_huge_arguments_under_the_limit_arrive_whole():
    text = json.dumps({"a": "x" * 2_000_000})
    huge = calls(piece(0, "x", name="f", arguments=text))
    reads = [huge[i : i + 65536] for i in range(0, len(huge), 65536)] + [DONE]
    events, error, _ = decode(reads)
    assert error is None
    assert arguments(events) == text


# --- Qwen3's inline tags (a server without a tool parser) ---------------------

INLINE = (
    "<think>\nParis, so <tool_call> it.\n</think>\n\nLooking.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    "</tool_call>"
)


def test_inline_tags_cut_across_events_and_reads_make_a_call():
    pieces = [INLINE[i : i + 3] for i in range(0, len(INLINE), 3)]
    body = b"".join(event(chunk(content=p)) for p in pieces)
    body += event(chunk("stop")) + DONE
    reads = [body[i : i + 7] for i in range(0, len(body), 7)]
    events, error, _ = decode(reads, think=ThinkTagSplitter())
    assert error is None
    thinking = [e.text for e in events if isinstance(e, Delta) and e.kind == "thinking"]
    answer = [e.text for e in events if isinstance(e, Delta) and e.kind == "content"]
    assert "".join(thinking) == "Paris, so <tool_call> it."
    assert "".join(answer) == "Looking.\n"
    assert events[-1] == CALLS
    assert [e for e in events if isinstance(e, ToolCallDelta)][0] == ToolCallDelta(
        0, "call_0", "get_weather", ""
    )
    assert arguments(events) == '{"city": "Paris"}'


async def test_inline_tags_are_text_without_tools(make_client):
    reads = (event(chunk(content='<tool_call>{"name": "f"}</tool_call>')), DONE)
    batches = await collect(make_client(stream_of(*reads)))
    assert batches[0] == [Delta("content", '<tool_call>{"name": "f"}</tool_call>')]


async def test_inline_tags_with_the_profiles_tags_off(make_client):
    reads = (event(chunk(content='<think>a</think><tool_call>{"name": "f"}')), DONE)
    client = make_client(stream_of(*reads), parse_tags=False)
    [batch, last] = await collect(client, tools=TOOLS)
    assert batch == [
        Delta("content", "<think>a</think>"),
        ToolCallDelta(0, "call_0", "f", ""),
    ]
    assert last == [ToolCallDelta(0, arguments="{}"), CALLS]
