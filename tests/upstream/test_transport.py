"""The aiohttp transport under httpx (`chat.upstream.transport`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator

import httpx
import pytest

from chat.upstream.transport import WRITTEN, AiohttpTransport
from tests.support.waiting import until


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


class ChunkedServer:
    """A raw HTTP/1.1 server: headers, then the chunks it is told to write, when
    it is told to (`write`), on the one connection it takes."""

    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None
        self.connected = asyncio.Event()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/"

    async def __aexit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()
        self.server.close()
        await self.server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        self.writer = writer
        self.connected.set()

    def write(self, *pieces: bytes, end: bool = False) -> None:
        assert self.writer is not None
        for piece in pieces:
            self.writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        if end:
            self.writer.write(b"0\r\n\r\n")


@contextlib.asynccontextmanager
async def streaming(
    read_timeout: float, *first: bytes
) -> AsyncIterator[tuple[ChunkedServer, httpx.Response]]:
    """A response of a `ChunkedServer` through the transport, `first` written."""
    server = ChunkedServer()
    timeout = httpx.Timeout(5, read=read_timeout)
    transport = AiohttpTransport(limits=httpx.Limits())
    async with (
        server as url,
        httpx.AsyncClient(transport=transport, timeout=timeout) as client,
    ):
        request = asyncio.ensure_future(
            client.send(client.build_request("GET", url), stream=True)
        )
        await server.connected.wait()
        server.write(*first)
        response = await request
        try:
            yield server, response
        finally:
            await response.aclose()


async def test_a_server_that_stops_sending_mid_body_times_out_after_what_it_sent():
    """The read timeout holds between reads of the body (`_IdleWatch`), not
    only for the headers: what came before is read, then `ReadTimeout`."""
    received = []
    async with streaming(0.3, b"one") as (server, response):
        # (The test's own limit, were the body never timed out: it would hang.)
        async with asyncio.timeout(60):
            with pytest.raises(httpx.ReadTimeout):
                async for data in response.aiter_bytes():
                    received.append(data)
                    if len(received) == 1:
                        server.write(b"two")  # then nothing more
    assert received == [b"one", b"two"]


async def test_a_reader_that_is_behind_is_not_timed_out():
    """Bytes waiting unread are not an idle server: a reader slower than the
    read timeout still gets the whole body."""
    pieces = (b"a" * 70_000, b"b" * 70_000, b"c" * 70_000)
    received = b""
    async with streaming(0.2, *pieces) as (server, response):
        server.write(end=True)
        async for data in response.aiter_bytes():
            received += data
            await asyncio.sleep(0.5)  # behind by more than the timeout
    assert received == b"".join(pieces)


async def test_a_request_says_it_was_written_before_its_answer_comes():
    """`WRITTEN` is called once the body is on its way: a server that answers
    only after it was called gets the whole body first, and answers."""
    loop = asyncio.get_running_loop()
    written: asyncio.Future[None] = loop.create_future()
    bodies: list[bytes] = []

    async def accept(reader: asyncio.StreamReader, writer) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.lower().splitlines()
            if line.startswith(b"content-length:")
        )
        bodies.append(await reader.readexactly(length))
        await written  # the client said so before any byte of the answer
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    calls: list[None] = []

    def said() -> None:
        calls.append(None)
        if not written.done():
            written.set_result(None)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with (
            httpx.AsyncClient(
                transport=AiohttpTransport(limits=httpx.Limits())
            ) as client,
            asyncio.timeout(30),
        ):
            request = client.build_request(
                "POST",
                f"http://127.0.0.1:{port}/api/chat",
                json={"messages": ["x" * 5000]},
                extensions={WRITTEN: said},
            )
            response = await client.send(request)
    finally:
        server.close()
        await server.wait_closed()
    assert response.text == "ok"
    assert json.loads(bodies[0]) == {"messages": ["x" * 5000]}
    assert calls  # once written, and again once answered (idempotent callers)


async def test_a_request_that_cannot_connect_says_so_too():
    """A request that fails before its body is written calls `WRITTEN` as it
    fails: nobody waits for a write that will not come."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on it now
    calls: list[None] = []
    async with httpx.AsyncClient(
        transport=AiohttpTransport(limits=httpx.Limits())
    ) as client:
        request = client.build_request(
            "POST",
            f"http://127.0.0.1:{port}/api/chat",
            json={"model": "m"},
            extensions={WRITTEN: lambda: calls.append(None)},
        )
        with pytest.raises(httpx.ConnectError):
            await client.send(request)
    assert calls == [None]
