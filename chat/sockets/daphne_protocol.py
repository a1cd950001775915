"""Changes to Daphne's servers (Autobahn and twisted.web on Twisted), made
before Daphne builds its factories (it imports the application first):
`chatsite.asgi`.

Close with a code. Autobahn fails a connection by dropping its TCP connection,
so a client sending a message over `--websocket-max-message-size` (or breaking
the protocol) sees 1006, "abnormal closure", as if the network had failed.
Autobahn's `failByDrop` option sends the close frame instead (1009, "message too
big": `chat.sockets.close_codes.CLOSE_TOO_BIG`; 1002, 1007 for protocol and
encoding errors), then closes. Daphne sets no such option and has no flag for it.

Write through. A frame sent to a socket is written to it at once, as asyncio's
own transports do, instead of Twisted's way: buffer it, ask the loop to watch the
socket for writability, write on the loop's next turn, stop watching. With one
frame per token (docs/latency.md, rule 1) that way costs two `epoll_ctl` calls,
one more turn of the loop and Autobahn's debug line (its arguments are formatted
even when debug logging is off) per token: about a quarter of the process's
CPU at 1,000 tokens a second (`python -m bench`). Whenever the direct write
cannot be made whole (the socket's buffer is full, something is queued before
it, TLS, the connection is closing), the frame, or what is left of it, goes
Twisted's way, behind what is queued: order and back-pressure are Twisted's.
An HTTP response's body goes the same way (`WriteThroughChannel`): a streamed
API answer writes one chunk per token, and Twisted's way cost it as much
(`python -m bench --only api`: 0.83 ms of CPU per token at 80 tok/s, 0.48
written through; its headers still go Twisted's way, and its first chunk
behind them).

Frame here. A socket's text message is framed by `WriteThroughProtocol.send_text`
when the connection is open and plain (no compression, fragmentation, masking
or tracing): the same bytes and counts as Autobahn's `sendMessage`, without the
five calls Daphne and Autobahn make per message (`Server.handle_reply`, the
protocol's `handle_reply`, `serverSend`, `sendMessage`, `sendFrame`). With one
frame per token that was about a tenth of the process's CPU (`python -m bench`).
Anything else goes Daphne's way, as before.

Bounded bodies. Twisted reads a request's whole body (into memory or a
temporary file) before Daphne hands the request to the application, so the
limits of `chat.web.request_bodies` are kept here, in the connection
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
stream of the process, for about 1.7 s, and sat in memory whole. In
`BoundedRequest.process` (Daphne's otherwise) a body that fits in one `CHUNK`
is still one message, put at once; a larger one is fed by a task, a `CHUNK` a
message, a turn of the loop each, never more than `QUEUED` messages waiting
for the application, and no more once the client has gone or the response
is finished.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Callable, Generator
from functools import partial
from typing import IO, Any
from urllib.parse import unquote

from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from daphne.utils import (
    HEADER_NAME_RE,
    INVALID_HEADER_VALUE_BYTES,
    parse_x_forwarded_for,
)
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from twisted.internet import tcp
from twisted.internet.defer import inlineCallbacks, maybeDeferred
from twisted.protocols.policies import ProtocolWrapper
from twisted.web import http
from twisted.web.http import _GenericHTTPChannelProtocol

from chat.web import request_bodies


def close_with_a_code() -> None:
    reset = WebSocketFactory.resetProtocolOptions
    if getattr(reset, "closes_with_a_code", False):
        return

    def reset_protocol_options(self: Any) -> None:
        reset(self)
        self.failByDrop = False

    reset_protocol_options.closes_with_a_code = True  # type: ignore[attr-defined]
    WebSocketFactory.resetProtocolOptions = reset_protocol_options


class WriteThroughProtocol(WebSocketProtocol):  # type: ignore[misc]
    """Daphne's protocol, its frames written to the socket at once when they can
    be (see the module's doc)."""

    def sendData(  # noqa: N802 (Autobahn's name)
        self, data: bytes, sync: bool = False, chopsize: int | None = None
    ) -> None:
        if sync or chopsize or self.send_queue or self.logOctets:
            super().sendData(data, sync, chopsize)
            return
        write_now(self.transport, data)
        # Autobahn's own counts, as its `sendData` keeps them.
        if self.state == WebSocketProtocol.STATE_OPEN:
            self.trafficStats.outgoingOctetsWireLevel += len(data)
        elif self.state in (self.STATE_CONNECTING, self.STATE_PROXY_CONNECTING):
            self.trafficStats.preopenOutgoingOctetsWireLevel += len(data)

    def send_text(self, text: str) -> bool:
        """Write `text` as one WebSocket text message now, framed as Autobahn
        frames it; False, with nothing sent, when the connection is not open
        or not plain (see the module's doc): then Daphne's own send applies."""
        if (
            self.state != WebSocketProtocol.STATE_OPEN
            or self._perMessageCompress is not None
            or self.autoFragmentSize
            or self.maskServerFrames
            or self.trackedTimings
            or self.logFrames
        ):
            return False
        payload = text.encode()
        size = len(payload)
        if 0 < self.maxMessagePayloadSize < size:
            return False  # Autobahn refuses it, in its own words
        stats = self.trafficStats
        stats.outgoingWebSocketMessages += 1
        stats.outgoingWebSocketFrames += 1
        stats.outgoingOctetsAppLevel += size
        stats.outgoingOctetsWebSocketLevel += size
        self.sendData(_header(size) + payload)
        return True


_FIN_TEXT = 0x81  # the final (only) frame of a text message
_SHORT = struct.Struct("!BB")
_MEDIUM = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


def _header(size: int) -> bytes:
    """An unmasked text frame's header (RFC 6455, 5.2)."""
    if size <= 125:
        return _SHORT.pack(_FIN_TEXT, size)
    if size <= 0xFFFF:
        return _MEDIUM.pack(_FIN_TEXT, 126, size)
    return _LONG.pack(_FIN_TEXT, 127, size)


def text_sender(send: Any) -> Callable[[str], bool] | None:
    """The connection's `send_text` when `send` is Daphne's ASGI send for a
    `WriteThroughProtocol` (a `partial` of `Server.handle_reply` on it); None
    under another server, or a test's communicator."""
    if (
        isinstance(send, partial)
        and getattr(send.func, "__func__", None) is Server.handle_reply
        and len(send.args) == 1
        and isinstance(send.args[0], WriteThroughProtocol)
    ):
        return send.args[0].send_text
    return None


def write_now(transport: Any, data: bytes) -> None:
    """Send `data` on the connection now if nothing is waiting before it; what
    is not sent (all of it, if anything was waiting) goes to Twisted's buffer."""
    sent = 0
    if (
        isinstance(transport, tcp.Connection)
        and transport.connected
        and not transport.disconnecting
        and not transport._writeDisconnected
        and not transport.TLS
        and not transport._tempDataBuffer
        and transport.offset == len(transport.dataBuffer)
    ):
        try:
            sent = transport.socket.send(data)
        except OSError:
            # Full (EWOULDBLOCK), or failing: Twisted's write finds out which
            # and closes the connection in its own way.
            sent = 0
    if sent < len(data):
        transport.write(data[sent:] if sent else data)


class WriteThroughChannel(http.HTTPChannel):
    """Twisted's HTTP connection, a response's body written to the socket at
    once when it can be (see the module's doc). Twisted's `Request` writes the
    body's chunks here (`write`, `writeSequence`), its headers to the
    transport."""

    def write(self, data: bytes) -> None:
        write_now(self.transport, data)

    def writeSequence(self, iovec: list[bytes]) -> None:  # noqa: N802 (Twisted's)
        write_now(self.transport, b"".join(iovec))


def _write_through_channel(factory: HTTPFactory) -> Any:
    """What `twisted.web.http.HTTPFactory.protocol` makes (its own factory
    function wraps an `HTTPChannel` the same way), with `WriteThroughChannel`."""
    return _GenericHTTPChannelProtocol(WriteThroughChannel())  # type: ignore[no-untyped-call]


def write_through() -> None:
    """Daphne's WebSocket connections use `WriteThroughProtocol`, its HTTP
    connections `WriteThroughChannel`."""
    WebSocketFactory.protocol = WriteThroughProtocol
    HTTPFactory.protocol = _write_through_channel


logger = logging.getLogger(__name__)

# A body's message to the application: one turn of the loop reads it from
# Twisted's file and Django writes it to its own (about a millisecond).
CHUNK = 1024 * 1024
# Messages the application may have waiting: the memory a body costs here.
QUEUED = 2

# Seconds a refused request's connection keeps reading (and dropping) what its
# client still sends, after the refusal, before it is closed.
LINGER = 5.0


class BoundedRequest(WebRequest):  # type: ignore[misc]
    """Daphne's request, its body held to its route's limit (see the module's
    doc); Twisted's own parse of forms off."""

    body_limit: int | None = None  # bytes; None: not decided (never read)
    received = 0

    feeding: asyncio.Task[None] | None = None
    path: bytes  # Twisted's, as `process` uses them
    transport: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)

    # Daphne 4.2.3's `WebRequest.process` (tests/sockets/test_daphne_protocol.py
    # holds the version), but for the body's last lines: `feed`.
    @inlineCallbacks
    def process(self) -> Generator[Any, Any, None]:
        try:
            self.request_start = time.time()

            # Validate header names and values.
            for name, values in self.requestHeaders.getAllRawHeaders():
                if not HEADER_NAME_RE.fullmatch(name):
                    self.basic_error(400, b"Bad Request", "Invalid header name")
                    return
                for value in values:
                    if INVALID_HEADER_VALUE_BYTES.intersection(value):
                        self.basic_error(400, b"Bad Request", "Invalid header value")
                        return

            upgrade_header = None
            if self.requestHeaders.hasHeader(b"Upgrade"):
                upgrade_header = self.requestHeaders.getRawHeaders(b"Upgrade")[0]
            if hasattr(self.client, "host") and hasattr(self.client, "port"):
                self.client_addr = [str(self.client.host), self.client.port]
                self.server_addr = [str(self.host.host), self.host.port]

            self.client_scheme = "https" if self.isSecure() else "http"

            if self.server.proxy_forwarded_address_header:
                self.client_addr, self.client_scheme = parse_x_forwarded_for(
                    self.requestHeaders,
                    self.server.proxy_forwarded_address_header,
                    self.server.proxy_forwarded_port_header,
                    self.server.proxy_forwarded_proto_header,
                    self.client_addr,
                    self.client_scheme,
                )
            try:
                self.path.decode("ascii")
            except UnicodeDecodeError:
                self.path = b"/"
                self.basic_error(400, b"Bad Request", "Invalid characters in path")
                return
            self.query_string = b""
            if b"?" in self.uri:
                self.query_string = self.uri.split(b"?", 1)[1]
                try:
                    self.query_string.decode("ascii")
                except UnicodeDecodeError:
                    self.basic_error(400, b"Bad Request", "Invalid query string")
                    return
            if upgrade_header and upgrade_header.lower() == b"websocket":
                protocol = self.server.ws_factory.buildProtocol(
                    self.transport.getPeer()
                )
                if not protocol:
                    self.setResponseCode(500)
                    logger.warning("Could not make WebSocket protocol")
                    self.finish()
                protocol._raw_query_string = self.query_string
                transport, self.transport = self.transport, None
                if isinstance(transport, ProtocolWrapper):
                    transport.wrappedProtocol = protocol
                else:
                    transport.protocol = protocol
                protocol.makeConnection(transport)
                data = self.method + b" " + self.uri + b" HTTP/1.1\x0d\x0a"
                for h in self.requestHeaders.getAllRawHeaders():
                    data += h[0] + b": " + b",".join(h[1]) + b"\x0d\x0a"
                data += b"\x0d\x0a"
                data += self.content.read()
                protocol.dataReceived(data)
                logger.debug("Upgraded connection %s to WebSocket", self.client_addr)
                self.server.protocol_disconnected(self)
                self.channel._networkProducer.resumeProducing()
            else:
                self.clean_headers = []
                self.root_path = self.server.root_path
                for name, values in self.requestHeaders.getAllRawHeaders():
                    if b"_" in name:  # CVE-2015-0219
                        continue
                    for value in values:
                        if name.lower() == b"daphne-root-path":
                            self.root_path = unquote(value.decode("ascii"))
                        else:
                            self.clean_headers.append((name.lower(), value))
                logger.debug("HTTP %s request for %s", self.method, self.client_addr)
                self.content.seek(0, 0)
                self.application_queue = yield maybeDeferred(
                    self.server.create_application,
                    self,
                    {
                        "type": "http",
                        "http_version": self.clientproto.split(b"/")[-1].decode(
                            "ascii"
                        ),
                        "method": self.method.decode("ascii"),
                        "path": unquote(self.path.decode("ascii")),
                        "raw_path": self.path,
                        "root_path": self.root_path,
                        "scheme": self.client_scheme,
                        "query_string": self.query_string,
                        "headers": self.clean_headers,
                        "client": self.client_addr,
                        "server": self.server_addr,
                    },
                )
                if self.application_queue is None or self.content.closed:
                    return  # abandoned before the application was made
                self.feed(self.application_queue, self.content)
        except Exception:
            logger.exception("Daphne HTTP processing error")
            self.basic_error(
                500, b"Internal Server Error", "Daphne HTTP processing error"
            )

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
