from __future__ import annotations

import asyncio
import json
import logging
import pickle
import socket
from contextlib import aclosing
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.upstream import (
    Delta,
    Event,
    Finished,
    OllamaClient,
    UpstreamError,
    model_facts,
)
from chat.upstream.events import error_for_transport
from chat.upstream.ollama import NDJSONDecoder, events_from_chunk
from tests.upstream.fake_servers import Body, Server, answer, raising, stream_of

BASE = "http://ollama.test:11434"
TIMEOUT = httpx.Timeout(5, read=300)


def line(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def chunk(content: str = "", thinking: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    return {"model": "qwen3:8b", "message": message, "done": False}


def done(content: str = "", **fields: Any) -> dict[str, Any]:
    base = {"model": "qwen3:8b", "message": {"role": "assistant", "content": content}}
    return {**base, "done": True, **fields}


METRICS: dict[str, Any] = {
    "done_reason": "stop",
    "total_duration": 4_883_583_458,
    "load_duration": 1_334_875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342_546_000,
    "eval_count": 282,
    "eval_duration": 4_535_599_000,
}
FINISHED = Finished(
    done_reason="stop",
    prompt_tokens=26,
    prompt_eval_ms=342.546,
    output_tokens=282,
    eval_ms=4535.599,
    load_ms=1.334875,
    total_ms=4883.583458,
)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings_logged():
    """The warnings of "chat.upstream", however logging is configured."""
    handler = Records()
    logger = logging.getLogger("chat.upstream")
    logger.addHandler(handler)
    yield lambda: handler.records
    logger.removeHandler(handler)


# --- NDJSONDecoder -----------------------------------------------------------

LONG = "x" * (9 * 1024 * 1024)
LONG_LINE = line({"long": LONG})
EMOJI = line({"t": "h\u00e9 \U0001f600"})

DECODER_CASES = {
    "one line per read": ([b'{"a":1}\n', b'{"b":2}\n'], [[{"a": 1}], [{"b": 2}]]),
    "line split across reads": ([b'{"a":', b"1}", b"\n"], [[], [], [{"a": 1}]]),
    "several lines in one read": ([b'{"a":1}\n{"b":2}\n'], [[{"a": 1}, {"b": 2}]]),
    "tail completes next read": (
        [b'{"a":1}\n{"b"', b":2}\n"],
        [[{"a": 1}], [{"b": 2}]],
    ),
    "utf-8 char split across reads": (
        [EMOJI[:9], EMOJI[9:13], EMOJI[13:]],
        [[], [], [{"t": "h\u00e9 \U0001f600"}]],
    ),
    "blank lines ignored": (
        [b"\n\n", b'  \n{"a":1}\n\r\n', b"\t\n"],
        [[], [{"a": 1}], []],
    ),
    "crlf line endings": ([b'{"a":1}\r\n{"b":2}\r\n'], [[{"a": 1}, {"b": 2}]]),
    "very long line in 64 KiB reads": (
        [LONG_LINE[i : i + 65536] for i in range(0, len(LONG_LINE), 65536)],
        [[]] * (len(LONG_LINE) // 65536) + [[{"long": LONG}]],
    ),
    "empty read": ([b""], [[]]),
}


@pytest.mark.parametrize(
    ("reads", "expected"), DECODER_CASES.values(), ids=DECODER_CASES.keys()
)
def test_decoder_feed(reads: list[bytes], expected: list[list[dict[str, Any]]]):
    decoder = NDJSONDecoder()
    assert [decoder.feed(data) for data in reads] == expected
    assert decoder.close() == []
    assert decoder.malformed == 0


MALFORMED_CASES = {
    "not json": (b'{"a":1}\nnot json\n{"b":2}\n', 1),
    "truncated object": (b'{"a":1}\n{"b":\n{"b":2}\n', 1),
    "json but not an object": (b'[1]\n"s"\n3\nnull\n{"a":1}\n{"b":2}\n', 4),
    "invalid utf-8": (b'{"a":1}\n\xff\xfe\n{"b":2}\n', 1),
    "deep nesting": (b'{"a":1}\n' + b"[" * 100_000 + b'\n{"b":2}\n', 1),
}


@pytest.mark.parametrize(
    ("data", "bad"), MALFORMED_CASES.values(), ids=MALFORMED_CASES.keys()
)
def test_decoder_skips_malformed_lines(data: bytes, bad: int, warnings_logged):
    decoder = NDJSONDecoder()
    assert decoder.feed(data) == [{"a": 1}, {"b": 2}]
    assert (decoder.parsed, decoder.malformed) == (2, bad)
    # One warning per stream, however many bad lines: a wrong URL can send a page.
    [warning] = warnings_logged()
    assert "not JSON" in warning.getMessage()


def test_decoder_close_parses_unterminated_last_line():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"b":') == [{"a": 1}]
    assert decoder.feed(b"2}") == []
    assert decoder.close() == [{"b": 2}]
    assert decoder.close() == []


def test_decoder_close_ignores_blank_remainder():
    decoder = NDJSONDecoder()
    decoder.feed(b'{"a":1}\n  ')
    assert decoder.close() == []
    assert decoder.malformed == 0


def test_decoder_refuses_endless_line():
    decoder = NDJSONDecoder(max_line=1024 * 1024)
    decoder.feed(b"x" * 1024 * 1024)
    with pytest.raises(UpstreamError) as info:
        decoder.feed(b"x")
    assert info.value.code == "malformed"
    assert "longer than 1 MiB" in info.value.detail


# --- events_from_chunk -------------------------------------------------------

CHUNK_CASES = {
    "thinking only": (
        chunk(thinking="Okay, the user"),
        [Delta("thinking", "Okay, the user")],
    ),
    "content": (chunk("Hello"), [Delta("content", "Hello")]),
    "empty content": (chunk(""), []),
    "thinking then content in one chunk": (
        chunk("Hi", thinking="hm"),
        [Delta("thinking", "hm"), Delta("content", "Hi")],
    ),
    "whitespace content kept": (chunk(" \n"), [Delta("content", " \n")]),
    "done with metrics": (done(**METRICS), [FINISHED]),
    "content in the done chunk comes first": (
        done("!", **METRICS),
        [Delta("content", "!"), FINISHED],
    ),
    "done without metrics": (done(), [Finished(done_reason="")]),
    "done with some metrics": (
        done(done_reason="length", eval_count=5, eval_duration=2_000_000),
        [Finished(done_reason="length", output_tokens=5, eval_ms=2.0)],
    ),
    "load": (done(done_reason="load"), [Finished(done_reason="load")]),
    "unknown fields tolerated": (
        {**chunk("a"), "logprobs": [], "remote_host": "x", "_debug_info": {}},
        [Delta("content", "a")],
    ),
    "odd types ignored": (
        {"message": {"content": 5, "thinking": None}, "done": "yes"},
        [],
    ),
    "message not an object": ({"message": "hi", "done": False}, []),
    "bad metric types": (
        done(done_reason=1, eval_count="5", eval_duration=True),
        [Finished(done_reason="")],
    ),
    "empty error ignored": ({**chunk("a"), "error": ""}, [Delta("content", "a")]),
}


@pytest.mark.parametrize(
    ("data", "expected"), CHUNK_CASES.values(), ids=CHUNK_CASES.keys()
)
def test_events_from_chunk(data: dict[str, Any], expected: list[object]):
    assert events_from_chunk(data) == expected


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("model runner has unexpectedly stopped", "model runner has unexpectedly"),
        ({"message": "out of memory", "type": "server_error"}, "out of memory"),
    ],
)
def test_events_from_chunk_error_line(error: object, message: str):
    with pytest.raises(UpstreamError) as info:
        events_from_chunk({"error": error})
    assert info.value.code == "upstream_error"
    assert message in info.value.detail
    assert info.value.detail.endswith(".")
    assert info.value.status is None


# --- any split of a stream decodes the same ------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
PIECES = st.lists(
    st.tuples(st.sampled_from(["thinking", "content"]), TEXT), max_size=12
)


@given(pieces=PIECES, last=TEXT, blank=st.booleans(), data=st.data())
def test_any_split_of_a_stream_gives_the_same_events(pieces, last, blank, data):
    chunks = [
        chunk(text) if kind == "content" else chunk("", text) for kind, text in pieces
    ]
    stream = b"".join(line(c) + (b"\n" if blank else b"") for c in chunks)
    stream += line(done(last, **METRICS))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=30)))
    reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]

    decoder = NDJSONDecoder()
    events = [e for r in reads for c in decoder.feed(r) for e in events_from_chunk(c)]
    events += [e for c in decoder.close() for e in events_from_chunk(c)]

    def joined(kind: str) -> str:
        return "".join(
            e.text for e in events if isinstance(e, Delta) and e.kind == kind
        )

    assert joined("thinking") == "".join(t for k, t in pieces if k == "thinking")
    assert joined("content") == "".join(t for k, t in pieces if k == "content") + last
    assert events[-1] == FINISHED
    assert decoder.malformed == 0


# --- OllamaClient over a mock transport ----------------------------------------


@pytest.fixture
async def make_client():
    clients: list[httpx.AsyncClient] = []

    def make(server: Server) -> OllamaClient:
        http = httpx.AsyncClient(
            transport=httpx.MockTransport(server.handler), timeout=TIMEOUT
        )
        clients.append(http)
        return OllamaClient(BASE + "/", http=http)

    yield make
    for http in clients:
        await http.aclose()


async def collect(client: OllamaClient, **kwargs: Any) -> list[list[Event]]:
    kwargs = {"think": None, "options": {}, **kwargs}
    messages = [{"role": "user", "content": "hi"}]
    async with aclosing(client.chat("qwen3:8b", messages, **kwargs)) as stream:
        return [batch async for batch in stream]


async def collect_until_error(
    client: OllamaClient,
) -> tuple[list[list[Event]], UpstreamError]:
    batches: list[list[Event]] = []
    with pytest.raises(UpstreamError) as info:
        async for batch in client.chat("qwen3:8b", [], think=None, options={}):
            batches.append(batch)
    return batches, info.value


async def test_chat_streams_thinking_then_content(make_client):
    server = stream_of(
        line(chunk("", "Okay")),
        line(chunk("", ", hi.")),
        line(chunk("Hello")),
        line(done("!", **METRICS)),
    )
    batches = await collect(make_client(server))
    assert batches == [
        [Delta("thinking", "Okay")],
        [Delta("thinking", ", hi.")],
        [Delta("content", "Hello")],
        [Delta("content", "!"), FINISHED],
    ]
    request = server.requests[0]
    assert (request.method, str(request.url)) == ("POST", BASE + "/api/chat")
    assert request.headers["accept-encoding"] == "identity"


async def test_chat_yields_one_list_per_read(make_client):
    server = stream_of(
        line(chunk("a")) + line(chunk("b")),
        line(chunk("", "skipped: empty content"))[:10],
        line(chunk("", "skipped: empty content"))[10:] + line(chunk("")),
        line(chunk("c")) + line(done(**METRICS)),
    )
    batches = await collect(make_client(server))
    assert batches == [
        [Delta("content", "a"), Delta("content", "b")],
        [Delta("thinking", "skipped: empty content")],
        [Delta("content", "c"), FINISHED],
    ]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"think": None}, {}),
        ({"think": True}, {"think": True}),
        ({"think": False}, {"think": False}),
        ({"think": False, "keep_alive": "10m"}, {"think": False, "keep_alive": "10m"}),
        ({"think": None, "keep_alive": -1}, {"keep_alive": -1}),
    ],
)
async def test_chat_request_body(make_client, kwargs, expected):
    server = stream_of(line(done(**METRICS)))
    options = {"num_ctx": 8192, "temperature": 0.6, "top_k": 20}
    await collect(make_client(server), options=options, **kwargs)
    assert server.body == {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "options": options,
        **expected,
    }


async def test_chat_ends_at_the_done_chunk(make_client):
    server = stream_of(
        line(chunk("a")),
        line(done(**METRICS)) + line(chunk("after done, same read")),
        line(chunk("after done, next read")),
        line(chunk("never read")),
    )
    batches = await collect(make_client(server))
    assert batches == [[Delta("content", "a")], [FINISHED]]


async def test_chat_done_chunk_without_final_newline(make_client):
    server = stream_of(line(chunk("a")), line(done("b", **METRICS)).rstrip(b"\n"))
    batches = await collect(make_client(server))
    assert batches == [[Delta("content", "a")], [Delta("content", "b"), FINISHED]]


async def test_chat_transport_error_after_done_is_ignored(make_client):
    server = stream_of(line(done(**METRICS)), then=httpx.ReadError("reset"))
    assert await collect(make_client(server)) == [[FINISHED]]


STATUS_CASES = {
    "404 model": (
        404,
        b'{"error":"model \\"qwen3:8b\\" not found, try pulling it first"}',
        "model_not_found",
        'Model "qwen3:8b" was not found on the model server at '
        f'{BASE}: model "qwen3:8b" not found, try pulling it first.',
    ),
    "404 text": (404, b"404 page not found", "model_not_found", "404 page not found."),
    "400 thinking": (
        400,
        b'{"error":"\\"llama3.2\\" does not support thinking"}',
        "thinking_unsupported",
        f'The model server at {BASE} refused thinking: "llama3.2" does not '
        "support thinking. Turn thinking off for this chat.",
    ),
    "400 other": (
        400,
        b'{"error":"invalid think value: \\"x\\""}',
        "bad_request",
        f'{BASE} rejected the request (HTTP 400): invalid think value: "x".',
    ),
    "503 busy": (
        503,
        b'{"error":"server busy, please try again.  '
        b'maximum pending requests exceeded"}',
        "upstream_busy",
        f"{BASE} is busy (HTTP 503): server busy, please try again. maximum "
        "pending requests exceeded. Try again in a moment.",
    ),
    "429 text": (429, b"Too many requests\n", "upstream_busy", "(HTTP 429): Too many"),
    "500 runner": (
        500,
        b'{"error":"model runner has unexpectedly stopped"}',
        "upstream_error",
        f"{BASE} failed (HTTP 500): model runner has unexpectedly stopped.",
    ),
    "502 html": (
        502,
        b"<html>\n<body>Bad   Gateway</body>\n</html>",
        "upstream_error",
        "(HTTP 502): <html> <body>Bad Gateway</body> </html>.",
    ),
    "500 empty body": (
        500,
        b"",
        "upstream_error",
        "(HTTP 500): Internal Server Error.",
    ),
    "openai-shaped error": (
        400,
        b'{"error":{"message":"bad role","type":"invalid_request_error"}}',
        "bad_request",
        "(HTTP 400): bad role.",
    ),
    "unexpected 302": (302, b"", "upstream_error", "unexpected HTTP 302: Found."),
}


@pytest.mark.parametrize(
    ("status", "content", "code", "detail"),
    STATUS_CASES.values(),
    ids=STATUS_CASES.keys(),
)
async def test_chat_status_errors(make_client, status, content, code, detail):
    batches, error = await collect_until_error(make_client(answer(status, content)))
    assert batches == []
    assert (error.code, error.status) == (code, status)
    assert detail in error.detail


def test_long_server_message_is_shortened():
    from chat.upstream.events import server_message

    message = server_message(b"x" * 10_000, "Bad Gateway")
    assert len(message) == 300
    assert message.endswith("\u2026")


def refused() -> httpx.ConnectError:
    error = httpx.ConnectError("All connection attempts failed")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return error


def not_resolved() -> httpx.ConnectError:
    error = httpx.ConnectError("[Errno -2] Name or service not known")
    error.__cause__ = socket.gaierror(-2, "Name or service not known")
    return error


TRANSPORT_CASES = {
    "refused": (
        refused(),
        "upstream_unreachable",
        f"The model server at {BASE} did not answer: connection refused.",
    ),
    "dns": (not_resolved(), "upstream_unreachable", "host name could not be resolved"),
    "other connect error": (
        httpx.ConnectError("[Errno 113] No route to host"),
        "upstream_unreachable",
        "did not answer: [Errno 113] No route to host.",
    ),
    "connect timeout": (
        httpx.ConnectTimeout("timed out"),
        "upstream_timeout",
        f"The model server at {BASE} did not accept a connection within 5 s.",
    ),
    "no first byte": (
        httpx.ReadTimeout("timed out"),
        "upstream_timeout",
        "sent nothing for 300 s; the model may still be loading",
    ),
    "pool timeout": (httpx.PoolTimeout("t"), "upstream_busy", "Too many requests"),
    "write timeout": (httpx.WriteTimeout("t"), "upstream_timeout", "within 5 s."),
    "closed without answer": (
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        "upstream_unreachable",
        "closed the connection without answering: server disconnected",
    ),
    "bad url": (
        httpx.UnsupportedProtocol("Request URL is missing an 'http://' protocol."),
        "upstream_unreachable",
        "is not a valid model server address",
    ),
}


@pytest.mark.parametrize(
    ("exc", "code", "detail"), TRANSPORT_CASES.values(), ids=TRANSPORT_CASES.keys()
)
async def test_chat_transport_errors(make_client, exc, code, detail):
    batches, error = await collect_until_error(make_client(raising(exc)))
    assert batches == []
    assert error.code == code
    assert detail in error.detail
    assert error.__cause__ is exc


@pytest.mark.parametrize(
    ("exc", "code", "detail"),
    [
        (httpx.ReadError("reset"), "stream_cut", "broke mid-answer: reset."),
        (
            httpx.RemoteProtocolError("peer closed connection"),
            "stream_cut",
            "broke mid-answer: peer closed connection.",
        ),
        (httpx.ReadTimeout("t"), "upstream_timeout", "stopped sending for 300 s"),
        (httpx.DecodingError("bad gzip"), "malformed", "could not be decoded"),
    ],
)
async def test_chat_errors_mid_stream_keep_what_came(make_client, exc, code, detail):
    server = stream_of(line(chunk("partial")), then=exc)
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "partial")]]
    assert error.code == code
    assert detail in error.detail


async def test_read_timeout_after_headers_before_body_means_no_first_byte(make_client):
    server = stream_of(then=httpx.ReadTimeout("t"))
    _, error = await collect_until_error(make_client(server))
    assert error.code == "upstream_timeout"
    assert "sent nothing for 300 s" in error.detail


async def test_chat_error_line_mid_stream(make_client):
    server = stream_of(
        line(chunk("a")),
        line(chunk("b")) + line({"error": "model runner has unexpectedly stopped"}),
        line(chunk("never")),
    )
    batches, error = await collect_until_error(make_client(server))
    # Text in the same read as the error line is still delivered.
    assert batches == [[Delta("content", "a")], [Delta("content", "b")]]
    assert error.code == "upstream_error"
    assert "model runner has unexpectedly stopped." in error.detail


async def test_chat_stream_cut_without_done(make_client):
    server = stream_of(line(chunk("a")), line(chunk("b"))[:7])
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "a")]]
    assert error.code == "stream_cut"
    assert f"The model server at {BASE} stopped before the answer" in error.detail


async def test_chat_stream_cut_after_unterminated_line(make_client):
    server = stream_of(line(chunk("a")), line(chunk("b")).rstrip(b"\n"))
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "a")], [Delta("content", "b")]]
    assert error.code == "stream_cut"


async def test_chat_empty_body_is_a_cut(make_client):
    _, error = await collect_until_error(make_client(stream_of()))
    assert error.code == "stream_cut"


async def test_chat_skips_a_malformed_line(make_client, warnings_logged):
    server = stream_of(
        line(chunk("a")), b"{garbage\n", line(chunk("b")), line(done(**METRICS))
    )
    batches = await collect(make_client(server))
    assert batches == [[Delta("content", "a")], [Delta("content", "b")], [FINISHED]]
    assert [r.name for r in warnings_logged()] == ["chat.upstream"]


async def test_chat_all_malformed_is_an_error(make_client):
    server = stream_of(b"<!doctype html>\n<html>\n", b"<body>It works!</body>\n")
    batches, error = await collect_until_error(make_client(server))
    assert batches == []
    assert error.code == "malformed"
    assert "Check that the address points at an Ollama server." in error.detail


async def test_breaking_out_closes_the_response(make_client):
    body = Body(line(chunk("a")), line(chunk("b")), line(chunk("c")), hang=True)
    client = make_client(Server(lambda request: httpx.Response(200, stream=body)))
    async with aclosing(client.chat("m", [], think=None, options={})) as stream:
        async for batch in stream:
            assert batch == [Delta("content", "a")]
            break
    assert body.closed
    assert body.sent == 1


async def test_cancelling_the_reader_closes_the_response(make_client):
    body = Body(line(chunk("a")), hang=True)
    client = make_client(Server(lambda request: httpx.Response(200, stream=body)))
    first = asyncio.Event()

    async def read() -> None:
        async for _ in client.chat("m", [], think=None, options={}):
            first.set()

    task = asyncio.create_task(read())
    await first.wait()
    await asyncio.sleep(0)  # let the reader block on the next read
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert body.closed


# --- the other endpoints -------------------------------------------------------

SHOW = {
    "details": {
        "family": "qwen3",
        "parameter_size": "8.2B",
        "quantization_level": "Q4_K_M",
    },
    "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
    "capabilities": ["completion", "tools", "thinking"],
}


async def test_version_tags_show(make_client):
    replies = {
        "/api/version": {"version": "0.12.5"},
        "/api/tags": {"models": [{"name": "qwen3:8b"}, "junk"]},
        "/api/show": SHOW,
    }
    server = Server(lambda request: httpx.Response(200, json=replies[request.url.path]))
    client = make_client(server)
    assert await client.version() == "0.12.5"
    assert await client.tags() == [{"name": "qwen3:8b"}]
    assert await client.show("qwen3:8b") == SHOW
    assert server.body == {"model": "qwen3:8b"}
    assert [r.method for r in server.requests] == ["GET", "GET", "POST"]


async def test_show_unknown_model(make_client):
    server = answer(404, b'{"error":"model \\"nope\\" not found"}')
    with pytest.raises(UpstreamError) as info:
        await make_client(server).show("nope")
    assert info.value.code == "model_not_found"


async def test_tags_on_something_else(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(404, b"Not Found")).tags()
    assert info.value.code == "upstream_error"
    assert "has no /api/tags (HTTP 404): Not Found." in info.value.detail


@pytest.mark.parametrize("content", [b"<html></html>", b"[]", b'{"models": 3}'])
async def test_tags_malformed(make_client, content):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(200, content)).tags()
    assert info.value.code == "malformed"


async def test_version_unreachable(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(raising(refused())).version()
    assert info.value.code == "upstream_unreachable"


async def test_load(make_client):
    server = stream_of(line(done(done_reason="load")))
    await make_client(server).load("qwen3:8b", "1h", options={"num_ctx": 8192})
    assert server.body == {
        "model": "qwen3:8b",
        "messages": [],
        "stream": True,
        "options": {"num_ctx": 8192},
        "keep_alive": "1h",
    }


async def test_load_error(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(404, b'{"error":"not found"}')).load("nope")
    assert info.value.code == "model_not_found"


@pytest.mark.parametrize(
    ("show", "expected"),
    [
        (SHOW, (True, 40960, "qwen3", "8.2B", "Q4_K_M")),
        (
            {
                "details": {"family": "llama"},
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": 8192,
                },
                "capabilities": ["completion"],
            },
            (False, 8192, "llama", "", ""),
        ),
        (
            {"capabilities": ["completion", "vision"]},
            (False, None, "", "", "", True),
        ),
        ({}, (False, None, "", "", "")),
        (
            {"model_info": {"qwen3.context_length": 5}, "capabilities": None},
            (False, None, "", "", ""),
        ),
    ],
)
def test_model_facts(show, expected):
    facts = model_facts(show)
    if len(expected) == 5:
        expected = (*expected, False)  # no vision
    assert (
        facts.supports_thinking,
        facts.context_length,
        facts.family,
        facts.parameter_size,
        facts.quantization,
        facts.supports_vision,
    ) == expected


def test_error_for_transport_without_timeouts():
    error = error_for_transport(
        httpx.ReadTimeout("t"),
        base_url=BASE,
        stage="streaming",
        timeout=httpx.Timeout(None),
    )
    assert "stopped sending for the time limit" in error.detail


def test_upstream_error_pickles():
    error = pickle.loads(
        pickle.dumps(UpstreamError("upstream_busy", "Busy.", status=503))
    )
    assert (error.code, error.detail, error.status) == ("upstream_busy", "Busy.", 503)


def test_upstream_error_fields():
    error = UpstreamError("upstream_busy", "Busy.", status=503)
    assert (error.code, error.detail, error.status, str(error)) == (
        "upstream_busy",
        "Busy.",
        503,
        "Busy.",
    )
