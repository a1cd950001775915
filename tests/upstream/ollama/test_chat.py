"""The Ollama client's chat over a mock transport: the answer streamed, the request
sent, the stream's end, cut or malformed, and the response closed."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import httpx
import pytest

from chat.upstream import Delta
from tests.upstream.fake_servers import Body, Server, stream_of
from tests.upstream.ollama.answering import (
    BASE,
    FINISHED,
    METRICS,
    chunk,
    collect,
    collect_until_error,
    done,
    line,
)


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
