"""An httpx transport that sends requests with aiohttp.

Why: a streamed answer costs one network read per token, and one Daphne process
does 4,000 of them a second with 100 answers streaming (`make bench`). httpx's own
transport (httpcore and h11 in pure Python, over anyio with a cancel scope per
read) spent about 95 µs of CPU per read there, and starting 100 requests at once
scans its pool quadratically; aiohttp (C HTTP parser, a plain asyncio protocol)
spends about 40 µs, the whole client included.

Callers keep httpx's API (`httpx.AsyncClient`, its timeouts and exceptions): this
transport maps aiohttp's errors to the httpx exceptions that httpx's own transport
raises for the same faults, so `events.error_for_transport` reads them the same.
One extension of its own: `WRITTEN`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import aiohttp.abc
import httpx
from yarl import URL

# A request extension: called once the request's body is handed to the socket
# (or the request failed before): `chat.live.engine.turn.early` waits for it.
WRITTEN = "chatsite.written"


class _Watched(aiohttp.BytesPayload):
    """A request body that says when aiohttp wrote it (its headers go with it)."""

    def __init__(self, body: bytes, written: Callable[[], None]) -> None:
        super().__init__(body)
        self._written = written

    async def write_with_length(
        self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
    ) -> None:
        try:
            await super().write_with_length(writer, content_length)
        finally:
            self._written()


class _NetworkStream:
    """What `response.extensions["network_stream"]` offers: the socket's details."""

    def __init__(self, transport: asyncio.BaseTransport | None) -> None:
        self._transport = transport

    def get_extra_info(self, name: str) -> Any:
        return None if self._transport is None else self._transport.get_extra_info(name)


class _IdleWatch:
    """A body's read timeout, checked by one timer a quarter of it apart rather
    than one timer per read: aiohttp re-arms its own at every network read,
    which cost a tenth of the relay's CPU per token at 1,000 tok/s (`make
    bench`). The model server stopped sending when, for `timeout` seconds, no
    byte arrived and none waited unread (a reader that is behind is not the
    server's fault); the read then fails within a quarter of `timeout` more."""

    def __init__(self, content: aiohttp.StreamReader, timeout: float) -> None:
        self.consumed = 0
        self._content = content
        self._timeout = timeout
        self._loop = asyncio.get_running_loop()
        self._received = content.total_bytes
        self._quiet_since = self._loop.time()
        self._handle = self._loop.call_later(timeout / 4, self._check)

    def _check(self) -> None:
        if self._content.is_eof():
            return  # the whole body came: nothing more to wait for
        now = self._loop.time()
        received = self._content.total_bytes
        if received != self._received or self.consumed < received:
            self._received, self._quiet_since = received, now
        elif now - self._quiet_since >= self._timeout:
            self._content.set_exception(
                aiohttp.SocketTimeoutError("Timeout on reading data from socket")
            )
            return
        self._handle = self._loop.call_later(self._timeout / 4, self._check)

    def cancel(self) -> None:
        self._handle.cancel()


class _ResponseBody(httpx.AsyncByteStream):
    def __init__(
        self, response: aiohttp.ClientResponse, read_timeout: float | None
    ) -> None:
        self._response = response
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        watch = None
        if self._read_timeout:
            watch = _IdleWatch(content, self._read_timeout)
        try:
            with _httpx_errors(in_body=True):
                # One piece per HTTP chunk (as httpx's own transport yields), each
                # as soon as it arrived; a chunk split across reads comes in parts.
                while True:
                    try:
                        data, end_of_chunk = await content.readchunk()
                    except aiohttp.ClientPayloadError:
                        # A broken connection's error is raised before the data
                        # that came before the break but was not read yet (as
                        # asyncio's StreamReader does, CPython issue 75044): a
                        # reader that was behind would lose the end of a cut
                        # answer. That data first.
                        rest = _unread(content)
                        if rest:
                            yield rest
                        raise
                    if data:
                        if watch is not None:
                            watch.consumed += len(data)
                        yield data
                    elif not end_of_chunk:
                        return  # the end of the body
        finally:
            if watch is not None:
                watch.cancel()

    async def aclose(self) -> None:
        # The connection goes back to the pool if the body was read to its end;
        # otherwise it is closed, which is how a model server learns to stop.
        self._response.release()


def _unread(content: aiohttp.StreamReader) -> bytes:
    """What `content` holds that was not read yet, even after its error (read
    through aiohttp's own private reader: no public read returns it then)."""
    return content._read_nowait(-1) if content._buffer else b""


class AiohttpTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over an `aiohttp.ClientSession`, created on first use (in the loop).

    Sockets get `TCP_NODELAY` (aiohttp sets it on every connection). No proxies
    from the environment, no decompression here (httpx decodes the body), no
    redirects (httpx follows them when asked). httpx's connect, read and pool
    timeouts apply; its write timeout does not (the request bodies are small).
    """

    def __init__(self, *, limits: httpx.Limits) -> None:
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            expiry = self._limits.keepalive_expiry
            connector = aiohttp.TCPConnector(
                limit=self._limits.max_connections or 0,
                limit_per_host=0,
                keepalive_timeout=15.0 if expiry is None else expiry,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{request.url.scheme}://'."
            )
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(
            total=None,
            # Waiting for a free connection of the pool (`limits`), then connecting.
            connect=_sum(timeouts.get("pool"), timeouts.get("connect")),
            sock_connect=timeouts.get("connect"),
            # httpx's read timeout: the wait for the headers and every read after.
            sock_read=timeouts.get("read"),
        )
        body = await request.aread()
        written = request.extensions.get(WRITTEN)
        data: bytes | aiohttp.BytesPayload | None = body or None
        if body and written is not None:
            data = _Watched(body, written)
        try:
            with _httpx_errors():
                response = await self._get_session().request(
                    request.method,
                    URL(str(request.url), encoded=True),
                    headers=[
                        (name.decode("latin-1"), value.decode("latin-1"))
                        for name, value in request.headers.raw
                    ],
                    data=data,
                    allow_redirects=False,
                    timeout=timeout,
                )
        finally:
            if written is not None:
                written()  # again if written: the caller's is idempotent
        # Not `response.connection`: a body already complete has handed its
        # connection back to the pool. The protocol keeps the socket either way.
        protocol = response._protocol
        if protocol is not None:
            # The body's reads are watched by `_IdleWatch`; the pool sets the
            # protocol's timeout again for its next request.
            protocol.read_timeout = None
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_ResponseBody(response, timeouts.get("read")),
            extensions={
                "http_version": b"HTTP/%d.%d" % tuple(response.version or (1, 1)),
                "reason_phrase": (response.reason or "").encode("latin-1"),
                "network_stream": _NetworkStream(
                    None if protocol is None else protocol.transport
                ),
            },
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _sum(*values: float | None) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


@contextmanager
def _httpx_errors(*, in_body: bool = False) -> Iterator[None]:
    """Raise aiohttp's errors as the httpx exceptions of the same faults."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "Timed out connecting.") from exc
    except aiohttp.SocketTimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "Timed out reading.") from exc
    except aiohttp.ServerTimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "Timed out reading.") from exc
    except aiohttp.ClientConnectorError as exc:
        # The OS error as the cause: it names the fault ("connection refused").
        raise httpx.ConnectError(str(exc)) from exc.os_error
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
        raise httpx.RemoteProtocolError(
            "Peer closed connection without sending complete message body."
            if in_body or isinstance(exc, aiohttp.ClientPayloadError)
            else "Server disconnected without sending a response."
        ) from exc
    except aiohttp.ClientResponseError as exc:
        # Not HTTP ("bad status line:" and a multi-line picture of the bytes).
        lines = (exc.message or str(exc)).strip().splitlines() or ["invalid HTTP"]
        raise httpx.RemoteProtocolError(lines[0].rstrip(":")) from exc
    except aiohttp.InvalidURL as exc:
        raise httpx.UnsupportedProtocol(str(exc)) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
