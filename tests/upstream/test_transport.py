"""The aiohttp transport under httpx (`chat.upstream.transport`)."""

from __future__ import annotations

import json

import httpx
import pytest

from chat.upstream.transport import AiohttpTransport
from tests.waiting import until


# Lines written before the cut: OpenAI's first chunk only names the role.
@pytest.mark.parametrize(
    ("path", "lines"), [("/api/chat", 12), ("/v1/chat/completions", 13)]
)
async def test_a_reader_behind_a_cut_connection_gets_every_byte_before_the_error(
    simulator, path, lines
):
    """The model server writes 12 tokens and closes the connection while the
    reader has taken only the first: the other 11 are still read, then the
    error (aiohttp would raise first, losing them)."""
    simulator.config.cut_after = 12
    body = {
        "model": "llama-demo:3b",
        "messages": [{"role": "user", "content": "Hello there"}],
        "stream": True,
    }
    async with (
        httpx.AsyncClient(transport=AiohttpTransport(limits=httpx.Limits())) as client,
        client.stream("POST", simulator.url + path, json=body) as response,
    ):
        chunks = response.aiter_bytes()
        received = [await anext(chunks)]
        # Behind: the break reached the client before it read the rest.
        # httpx's wrapper around the transport's body, then aiohttp's reader.
        body_stream = response.stream._stream  # type: ignore[attr-defined]
        content = body_stream._response.content
        await until(content.exception, "the connection's break, client side")
        with pytest.raises(httpx.RemoteProtocolError):
            async for data in chunks:
                received.append(data)
    written = [line for line in b"".join(received).decode().splitlines() if line]
    assert len(written) == lines
    assert all(json.loads(line.removeprefix("data: ")) for line in written)
    assert simulator.log[-1].fault == "cut"
