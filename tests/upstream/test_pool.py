from __future__ import annotations

import asyncio
import json
import re
import socket
from contextlib import aclosing

import httpx
import pytest

from chat.upstream import ClientPool, Delta, Finished, OllamaClient

BASE = "http://ollama.test:11434"


@pytest.fixture
async def pool():
    clients = ClientPool()
    yield clients
    await clients.aclose()


async def test_same_client_for_the_same_server(pool):
    client = pool.http(BASE)
    assert pool.http(BASE) is client
    assert pool.http(BASE + "/") is client


async def test_different_client_per_server(pool):
    assert pool.http(BASE) is not pool.http("http://gpu2:11434")


async def test_closed_client_is_replaced(pool):
    client = pool.http(BASE)
    await client.aclose()
    assert pool.http(BASE) is not client


async def test_client_settings(settings, pool):
    settings.UPSTREAM_CONNECT_TIMEOUT = 2
    settings.UPSTREAM_FIRST_TOKEN_TIMEOUT = 60
    client = pool.http(BASE)
    assert client.timeout == httpx.Timeout(connect=2, read=60, write=10, pool=10)
    assert client.trust_env is False


async def test_ollama_client_uses_the_pool(pool):
    client = pool.ollama(BASE + "/")
    assert isinstance(client, OllamaClient)
    assert client.base_url == BASE
    assert client._http is pool.http(BASE)


async def test_aclose(pool):
    client = pool.http(BASE)
    await pool.aclose()
    assert client.is_closed
    assert pool.http(BASE) is not client


# --- over a real loopback socket -------------------------------------------------


def ndjson(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


LINES = [
    ndjson({"message": {"role": "assistant", "content": "Hi"}, "done": False}),
    ndjson({"message": {"role": "assistant", "content": ""}, "done": True}),
]


class LoopbackOllama:
    """Answers each request with chunked NDJSON `lines`; with `finish=False` it
    sends only the first line, then waits for the client to go away."""

    def __init__(self, lines: list[bytes], *, finish: bool = True) -> None:
        self.lines = lines
        self.finish = finish
        self.connections = 0
        self.disconnected = asyncio.Event()

    async def handle(self, reader, writer) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                await reader.readexactly(int(length.group(1)) if length else 0)
                await self.answer(reader, writer)
        except asyncio.IncompleteReadError:
            self.disconnected.set()
        finally:
            writer.close()

    async def answer(self, reader, writer) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        for data in self.lines if self.finish else self.lines[:1]:
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
        if not self.finish:
            await reader.read()  # until the client closes the connection
            raise asyncio.IncompleteReadError(b"", None)
        writer.write(b"0\r\n\r\n")
        await writer.drain()


@pytest.fixture
async def loopback():
    servers = []

    async def start(fake: LoopbackOllama) -> str:
        server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_pooled_sockets_have_tcp_nodelay(loopback, pool):
    base = await loopback(LoopbackOllama(LINES))
    async with pool.http(base).stream("POST", base + "/api/chat") as response:
        sock = response.extensions["network_stream"].get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        await response.aread()


async def test_finished_answers_reuse_the_connection(loopback, pool):
    fake = LoopbackOllama(LINES)
    client = pool.ollama(await loopback(fake))
    for _ in range(3):
        batches = [b async for b in client.chat("m", [], think=None, options={})]
        assert batches == [[Delta("content", "Hi")], [Finished(done_reason="")]]
    assert fake.connections == 1


async def test_stopping_closes_the_upstream_connection(loopback, pool):
    fake = LoopbackOllama(LINES, finish=False)
    client = pool.ollama(await loopback(fake))
    async with aclosing(client.chat("m", [], think=None, options={})) as stream:
        async for batch in stream:
            assert batch == [Delta("content", "Hi")]
            break
    # What Ollama sees when a user presses Stop: the connection goes away.
    await asyncio.wait_for(fake.disconnected.wait(), 5)
