"""Daphne's WebSocket frames, and its HTTP responses' bodies, are written to
the socket at once, and go Twisted's way (buffered, written when the socket is
writable) whenever they cannot be (`chat.http.daphne_protocol.write_now`,
`WriteThroughChannel`); a socket's text messages are framed by the connection
itself, byte for byte as Autobahn frames them (`send_text`).
A real socket pair and Twisted's own TCP transport; Twisted's memory reactor
records what it is asked to watch.
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Iterator
from functools import partial

import pytest
from autobahn.websocket.protocol import TrafficStats, WebSocketProtocol
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from daphne.ws_protocol import WebSocketFactory
from twisted.internet import address, tcp
from twisted.internet.testing import MemoryReactor
from twisted.web import http

from chat.http.bounded_bodies import (
    BoundedChannel,
    BoundedRequest,
    bound_request_bodies,
)
from chat.http.daphne_protocol import (
    WriteThroughChannel,
    WriteThroughProtocol,
    text_sender,
    write_now,
    write_through,
)


class TLSLayer:
    """Where Twisted hands a TLS connection's writes (to be encrypted)."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.fixture
def connection() -> Iterator[tuple[tcp.Connection, socket.socket, MemoryReactor]]:
    ours, peer = socket.socketpair()
    reactor = MemoryReactor()
    transport = tcp.Connection(ours, TLSLayer(), reactor)  # type: ignore[arg-type]
    transport.connected = True  # as tcp.Server sets it for an accepted one
    try:
        yield transport, peer, reactor
    finally:
        ours.close()
        peer.close()


def received(peer: socket.socket) -> bytes:
    peer.setblocking(False)
    out = b""
    while True:
        try:
            data = peer.recv(1 << 20)
        except BlockingIOError:
            return out
        if not data:
            return out
        out += data


def test_a_frame_is_on_the_socket_before_the_loop_turns(connection):
    transport, peer, reactor = connection
    write_now(transport, b"frame one")
    assert received(peer) == b"frame one"
    assert transport not in reactor.writers  # nothing left to write later


def test_a_frame_waits_behind_what_is_queued(connection):
    transport, peer, reactor = connection
    transport.write(b"queued ")
    write_now(transport, b"then this")
    assert received(peer) == b""
    assert transport in reactor.writers
    transport.doWrite()  # the loop found the socket writable
    assert received(peer) == b"queued then this"


def test_what_a_full_socket_did_not_take_is_written_later_in_order(connection):
    transport, peer, reactor = connection
    transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    big = bytes(range(256)) * 4096  # 1 MiB: more than the socket takes at once
    write_now(transport, big)
    assert transport in reactor.writers
    got = received(peer)
    assert 0 < len(got) < len(big)
    while transport in reactor.writers:
        transport.doWrite()
        got += received(peer)
    assert got == big


@pytest.mark.parametrize("state", ["disconnecting", "TLS", "closed"])
def test_a_closing_or_tls_connection_is_left_to_twisted(connection, state):
    transport, peer, reactor = connection
    if state == "closed":
        transport.connected = False
    else:
        setattr(transport, state, True)
    write_now(transport, b"frame")
    assert received(peer) == b""  # nothing written past Twisted
    if state == "TLS":
        assert transport.protocol.written == [b"frame"]  # to be encrypted
    elif state == "disconnecting":
        transport.doWrite()  # Twisted writes what it has before it closes
        assert received(peer) == b"frame"


@pytest.fixture
def protocol(connection) -> WriteThroughProtocol:
    """An open WebSocket connection on the socket pair, with the options Daphne
    gives its factory, as Autobahn's `_connectionMade` copies them."""
    transport, _, _ = connection
    factory = WebSocketFactory(None, server="test")
    factory.setProtocolOptions(maxMessagePayloadSize=1 << 20)
    made = WriteThroughProtocol()
    made.factory = factory
    for option in made.CONFIG_ATTRS:
        setattr(made, option, getattr(factory, option))
    made.transport = transport
    made.trafficStats = TrafficStats()
    made.send_queue = deque()
    made.logOctets = made.logFrames = False
    made.trackedTimings = None
    made._perMessageCompress = None
    made.state = WebSocketProtocol.STATE_OPEN
    return made


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 300_000])
def test_a_text_message_is_framed_as_autobahn_frames_it(connection, protocol, size):
    text = "é" * (size // 4) + "x" * (size - 2 * (size // 4))  # `size` in UTF-8
    assert len(text.encode()) == size
    assert protocol.send_text(text)
    ours = received_all(connection)
    ours_stats = protocol.trafficStats.__json__()
    protocol.trafficStats = TrafficStats()
    protocol.sendMessage(text.encode())
    assert ours == received_all(connection)
    assert ours_stats == protocol.trafficStats.__json__()


def received_all(connection) -> bytes:
    """What the peer got, all of it: what the socket did not take at once is
    written as the loop would, when the socket is writable."""
    transport, peer, reactor = connection
    got = received(peer)
    while transport in reactor.writers:
        transport.doWrite()
        got += received(peer)
    return got


@pytest.mark.parametrize(
    "state",
    ["connecting", "closing", "compressing", "fragmenting", "masking", "too big"],
)
def test_what_is_not_an_open_plain_connection_is_left_to_daphne(
    connection, protocol, state
):
    _, peer, _ = connection
    if state == "connecting":
        protocol.state = WebSocketProtocol.STATE_CONNECTING
    elif state == "closing":
        protocol.state = WebSocketProtocol.STATE_CLOSING
    elif state == "compressing":
        protocol._perMessageCompress = object()
    elif state == "fragmenting":
        protocol.autoFragmentSize = 10
    elif state == "masking":
        protocol.maskServerFrames = True
    else:
        protocol.maxMessagePayloadSize = 4
    assert not protocol.send_text("hello")
    assert received(peer) == b""
    assert protocol.trafficStats.outgoingWebSocketMessages == 0


def test_the_sender_is_found_only_in_daphnes_own_send(protocol):
    server = Server.__new__(Server)  # only its bound method is looked at
    assert text_sender(partial(server.handle_reply, protocol)) == protocol.send_text

    async def other_send(message: object) -> None: ...

    assert text_sender(other_send) is None  # another server, a communicator
    assert text_sender(partial(server.handle_reply, object())) is None
    assert text_sender(partial(other_send)) is None


def test_daphnes_http_connections_write_through_and_bound_bodies():
    write_through()
    bound_request_bodies()  # as chatsite/asgi.py has them, in this order
    built = HTTPFactory(server=None).buildProtocol(None)
    assert isinstance(built._channel, BoundedChannel)
    assert isinstance(built._channel, WriteThroughChannel)
    assert built._channel.requestFactory is BoundedRequest
    assert issubclass(BoundedRequest, WebRequest)  # Daphne's, bounded


def test_a_streamed_responses_chunks_are_on_the_socket_before_the_loop_turns(
    connection,
):
    transport, peer, reactor = connection
    here = address.IPv4Address("TCP", "127.0.0.1", 8000)
    transport.getPeer = transport.getHost = lambda: here  # a socket pair has none
    channel = WriteThroughChannel()
    channel.makeConnection(transport)
    request = http.Request(channel)
    request.clientproto, request.method = b"HTTP/1.1", b"POST"
    request.write(b"first")
    # The headers went Twisted's way, the first chunk behind them.
    assert received(peer) == b""
    transport.doWrite()
    head, first = received(peer).split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert first == b"5\r\nfirst\r\n"
    request.write(b"token")
    assert received(peer) == b"5\r\ntoken\r\n"  # no turn of the loop
    assert transport not in reactor.writers
    transport.write(b"queued ")  # something waits: the chunk goes behind it
    request.write(b"later")
    assert received(peer) == b""
    transport.doWrite()
    assert received(peer) == b"queued 5\r\nlater\r\n"


def test_the_request_process_is_daphnes_of_the_pinned_version():
    """`DaphneRequest.process` is Daphne 4.2.3's but for how the body is fed:
    another Daphne needs it read again (and this test moved on)."""
    import daphne

    assert daphne.__version__ == "4.2.3"
