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

Bounded bodies, and no form parsed in the loop, are `chat.http.bounded_bodies`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial
from typing import Any

from daphne.http_protocol import HTTPFactory
from daphne.server import Server
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from twisted.internet import tcp
from twisted.web import http
from twisted.web.http import _GenericHTTPChannelProtocol


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
