"""Daphne's HTTP requests held to their route's limit, on Daphne's
connections (`chat.http.daphne_protocol` writes them through).

Bounded bodies. Twisted reads a request's whole body (into memory or a
temporary file) before Daphne hands the request to the application, so the
limits of `chat.http.request_bodies` are kept here, in the connection
(`BoundedChannel`, `BoundedRequest`): a request is refused at its headers (its
declared length over its route's limit, a multipart form where no upload is
taken, a signed-out upload), or as soon as the bytes received pass the limit
(chunked), before the application runs. The refusal is written, the
connection's sending side closed, and what the client still sends is read and
dropped for up to `LINGER` seconds, so that a client still sending reads the
answer instead of a reset connection.

No form parsed in the loop. Twisted's `Request` parses the body of every form
POST into its `args` (a multipart one with the `email` package: a 20 MB
upload held the event loop, and every stream of the process, for about a
second) before Daphne sees it; Daphne never reads `args`, and Django parses
the form itself, off the loop. `BoundedRequest` turns that parse off.

A body fed, not poured. Daphne's `WebRequest.process` copied a request's whole
body from Twisted's file into the application's queue, 8 KiB a message, in one
turn of the loop, and Django's `ASGIHandler.read_body` took them all from the
never-empty queue without yielding: a 190 MB import held the loop, and every
stream of the process, for about 1.7 s, and sat in memory whole. Here
(`BoundedRequest.feed`, called by Daphne's own `process`,
`chat.http.daphne_request`) a body that fits in one `CHUNK`
is still one message, put at once; a larger one is fed by a task, a `CHUNK` a
message, a turn of the loop each, never more than `QUEUED` messages waiting
for the application, and no more once the client has gone or the response
is finished.
"""

from __future__ import annotations

import asyncio
import logging
from typing import IO, Any

from daphne.http_protocol import HTTPFactory
from twisted.web import http
from twisted.web.http import _GenericHTTPChannelProtocol

from chat.http import request_bodies
from chat.http.daphne_protocol import WriteThroughChannel
from chat.http.daphne_request import DaphneRequest

logger = logging.getLogger(__name__)

# A body's message to the application: one turn of the loop reads it from
# Twisted's file and Django writes it to its own (about a millisecond).
CHUNK = 1024 * 1024
# Messages the application may have waiting: the memory a body costs here.
QUEUED = 2

# Seconds a refused request's connection keeps reading (and dropping) what its
# client still sends, after the refusal, before it is closed.
LINGER = 5.0


class BoundedRequest(DaphneRequest):
    """Daphne's request, its body held to its route's limit (see the module's
    doc); Twisted's own parse of forms off."""

    body_limit: int | None = None  # bytes; None: not decided (never read)
    received = 0

    feeding: asyncio.Task[None] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)

    def feed(self, queue: asyncio.Queue[dict[str, Any]], content: IO[bytes]) -> None:
        """The body to the application: at once when it is one `CHUNK`, else
        its first `CHUNK` now and the rest by a task (see the module's doc)."""
        chunk = content.read(CHUNK)
        more = len(chunk) == CHUNK
        queue.put_nowait({"type": "http.request", "body": chunk, "more_body": more})
        if more:
            self.feeding = asyncio.ensure_future(self._feed_rest(queue, content))

    async def _feed_rest(
        self, queue: asyncio.Queue[dict[str, Any]], content: IO[bytes]
    ) -> None:
        # `put` waits while QUEUED messages wait for the application: the
        # queue's own bound (Daphne makes it unbounded; `send_disconnect`
        # lifts the bound again for its last message).
        queue._maxsize = QUEUED  # type: ignore[attr-defined]
        try:
            while not content.closed:
                chunk = content.read(CHUNK)
                more = len(chunk) == CHUNK
                message = {"type": "http.request", "body": chunk, "more_body": more}
                await queue.put(message)
                if not more:
                    return
                await asyncio.sleep(0)  # the others' turn, however fast it goes
        except Exception:
            logger.exception("Feeding a request's body to the application failed")
            if not self.finished and self.channel is not None:
                self.basic_error(
                    500, b"Internal Server Error", "Daphne HTTP processing error"
                )
        finally:
            self.feeding = None
            queue._maxsize = 0  # type: ignore[attr-defined]

    def send_disconnect(self) -> None:
        """Daphne's, after the feeding of the body is stopped: the client has
        gone, or the response is finished."""
        if self.feeding is not None:
            self.feeding.cancel()
            self.feeding = None
            self.application_queue._maxsize = 0
        super().send_disconnect()

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 (Twisted's)
        channel = self.channel
        if isinstance(channel, BoundedChannel):
            if channel.refused:
                return
            self.received += len(data)
            if self.body_limit is not None and self.received > self.body_limit:
                channel.refuse(request_bodies.too_large(channel.head))
                return
        super().handleContentChunk(data)


class BoundedChannel(WriteThroughChannel):
    """Twisted's HTTP connection (writing through), each request's body held to
    its route's limit (see the module's doc)."""

    refused = False
    head = request_bodies.Head(b"", 0)

    def allHeadersReceived(self) -> None:  # noqa: N802 (Twisted's)
        request = self.requests[-1]
        headers = request.requestHeaders

        def header(name: bytes) -> bytes:
            values = headers.getRawHeaders(name)
            return values[0] if values else b""

        self.head = request_bodies.Head(
            target=bytes(self._path),  # type: ignore[call-overload]
            length=self.length,
            content_type=header(b"content-type"),
            cookie=b"; ".join(headers.getRawHeaders(b"cookie") or []),
            accept_language=header(b"accept-language"),
        )
        decided = request_bodies.at_headers(self.head)
        if isinstance(decided, request_bodies.Refusal):
            self.refuse(decided)
            return
        request.body_limit = decided
        super().allHeadersReceived()  # type: ignore[no-untyped-call]

    def refuse(self, refusal: request_bodies.Refusal) -> None:
        """Answer `refusal` now, before the application has seen the request,
        and read no more of it."""
        self.refused = True
        reason = http.RESPONSES.get(refusal.status, b"Refused")
        transport: Any = self.transport
        transport.write(
            b"HTTP/1.1 %d %s\r\n" % (refusal.status, reason)
            + b"Content-Type: "
            + refusal.content_type
            + b"\r\n"
            + b"Content-Length: %d\r\n" % len(refusal.body)
            + b"X-Content-Type-Options: nosniff\r\n"
            + b"Connection: close\r\n\r\n"
            + refusal.body
        )
        # Sent (FIN after the answer), then closed when the client closes
        # its side or after LINGER (`timeoutConnection`).
        self.persistent = False
        self.setTimeout(LINGER)  # type: ignore[no-untyped-call]
        if hasattr(transport, "loseWriteConnection"):
            transport.loseWriteConnection()
        else:
            transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted's)
        if self.refused:
            return  # dropped; not a sign of life (no resetTimeout)
        super().dataReceived(data)  # type: ignore[no-untyped-call]

    def rawDataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted's)
        if not self.refused:
            super().rawDataReceived(data)

    def allContentReceived(self) -> None:  # noqa: N802 (Twisted's)
        if not self.refused:
            super().allContentReceived()  # type: ignore[no-untyped-call]


def _bounded_channel(factory: HTTPFactory) -> Any:
    return _GenericHTTPChannelProtocol(BoundedChannel())  # type: ignore[no-untyped-call]


def bound_request_bodies() -> None:
    """Daphne's HTTP connections are `BoundedChannel`s (which write through,
    as `write_through` has them), their requests `BoundedRequest`s."""
    HTTPFactory.protocol = _bounded_channel
    build = HTTPFactory.buildProtocol
    if getattr(build, "bounds_bodies", False):
        return

    def build_protocol(self: HTTPFactory, addr: Any) -> Any:
        protocol = build(self, addr)  # Daphne's: it sets its WebRequest
        protocol.requestFactory = BoundedRequest
        return protocol

    build_protocol.bounds_bodies = True  # type: ignore[attr-defined]
    HTTPFactory.buildProtocol = build_protocol
