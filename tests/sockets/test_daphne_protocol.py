"""Daphne's WebSocket frames are written to the socket at once, and go Twisted's
way (buffered, written when the socket is writable) whenever they cannot be
(`chat.sockets.daphne_protocol.write_now`). A real socket pair and Twisted's
own TCP transport; Twisted's memory reactor records what it is asked to watch.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from twisted.internet import tcp
from twisted.internet.testing import MemoryReactor

from chat.sockets.daphne_protocol import write_now


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
