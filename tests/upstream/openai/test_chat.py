"""The OpenAI client's chat over a mock transport: one list of events per read,
inline tags split by the profile, the response closed when left."""

from __future__ import annotations

from contextlib import aclosing

import httpx

from chat.upstream import Delta
from tests.upstream.fake_servers import Body, Server, stream_of
from tests.upstream.openai.answering import DONE, MODEL, STOP, chunk, collect, event


async def test_chat_yields_one_list_per_read(make_client):
    server = stream_of(
        event(chunk(reasoning_content="a")) + event(chunk(content="b")),
        event(chunk("stop")) + DONE,
    )
    batches = await collect(make_client(server))
    assert batches == [[Delta("thinking", "a"), Delta("content", "b")], [STOP]]


async def test_chat_splits_inline_tags_unless_the_profile_says_not(make_client):
    reads = (event(chunk(content="<think>a</think>b")), DONE)
    parsed = await collect(make_client(stream_of(*reads)))
    raw = await collect(make_client(stream_of(*reads), parse_tags=False))
    assert parsed[0] == [Delta("thinking", "a"), Delta("content", "b")]
    assert raw[0] == [Delta("content", "<think>a</think>b")]


async def test_close_only_tags_with_thinking_off_are_all_answer(make_client):
    reads = (event(chunk(content="Yes.")), DONE)
    batches = await collect(make_client(stream_of(*reads), opened=True), think=False)
    assert batches[0] == [Delta("content", "Yes.")]


async def test_breaking_out_closes_the_response(make_client):
    body = Body(event(chunk(content="a")), hang=True)
    server = Server(lambda request: httpx.Response(200, stream=body))
    async with aclosing(
        make_client(server).chat(MODEL, [], think=None, options={})
    ) as stream:
        async for _ in stream:
            break
    assert body.closed
