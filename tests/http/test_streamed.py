"""A sync generator served under ASGI a piece at a time (chat.http.streamed)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.test import RequestFactory

from chat.http.streamed import _one_at_a_time, streamed


@pytest.mark.parametrize("reads_database", [True, False])
def test_under_asgi_pieces_are_taken_one_at_a_time_and_closed_early(reads_database):
    taken, closed = [], []

    def pieces():
        try:
            for n in range(3):
                taken.append(n)
                yield bytes([n])
        finally:
            closed.append(True)

    async def first_only():
        stream = _one_at_a_time(pieces(), reads_database)
        piece = await stream.__anext__()
        await stream.aclose()  # the client went away
        return piece

    assert asyncio.run(first_only()) == b"\x00"
    assert taken == [0] and closed == [True]


def test_a_client_gone_mid_read_closes_the_generator_after_the_read():
    """The read in a worker thread cannot be cancelled: the generator is closed
    once it returns, never while it runs ("generator already executing")."""
    reading, release = threading.Event(), threading.Event()
    closed = []

    def pieces():
        try:
            reading.set()
            release.wait(timeout=30)
            yield b"late"
        finally:
            closed.append(True)

    async def cancelled_mid_read():
        stream = _one_at_a_time(pieces(), False)
        consumer = asyncio.ensure_future(stream.__anext__())
        await asyncio.get_running_loop().run_in_executor(None, reading.wait, 30)
        consumer.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert not consumer.done() and closed == []  # the read still runs
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        await stream.aclose()

    asyncio.run(cancelled_mid_read())
    assert closed == [True]


def test_a_sync_request_gets_the_generator_itself():
    pieces = iter([b"a", b"b"])
    assert streamed(RequestFactory().get("/"), pieces, reads_database=True) is pieces
