"""A fake model server behind `httpx.MockTransport`: it answers every request
with a function of the request, and its response bodies record being closed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx


class Body(httpx.AsyncByteStream):
    """A response body that yields its reads, then raises or waits, and records
    being closed (which, on a real connection, is what the server sees)."""

    def __init__(self, *reads: bytes, then: Exception | None = None, hang=False):
        self.reads = reads
        self.then = then
        self.hang = hang
        self.sent = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for data in self.reads:
            self.sent += 1
            yield data
        if self.then is not None:
            raise self.then
        if self.hang:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


class Server:
    """A fake Ollama: answers every request with `respond(request)`."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]):
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request)

    @property
    def body(self) -> Any:
        return json.loads(self.requests[-1].content)


def stream_of(*reads: bytes, **kwargs: Any) -> Server:
    return Server(lambda request: httpx.Response(200, stream=Body(*reads, **kwargs)))


def answer(status: int, content: bytes | None = None, **kwargs: Any) -> Server:
    return Server(lambda request: httpx.Response(status, content=content, **kwargs))


def raising(exc: Exception) -> Server:
    def respond(request: httpx.Request) -> httpx.Response:
        raise exc

    return Server(respond)
