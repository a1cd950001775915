"""The in-process sockets' communicator (tests/support/communicators.py): every wait
ends, even on an application that does not end when cancelled."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tests.support import communicators
from tests.support.communicators import WebsocketCommunicator


def stubborn_application(released: asyncio.Event):
    """Accepts, then ignores every cancellation until `released` is set (as
    a read of Redis that swallowed its cancellation did:
    chat/live/engine/processes/layer.py)."""

    async def application(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        while not released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await released.wait()

    return application


@pytest.mark.parametrize("how", ["disconnect", "receive"])
async def test_an_application_that_ignores_its_cancellation_fails_the_wait(
    how, monkeypatch
):
    monkeypatch.setattr(communicators, "ENDING_SECONDS", 0.5)
    released = asyncio.Event()
    communicator = WebsocketCommunicator(stubborn_application(released), "/ws/x/")
    try:
        assert (await communicator.connect())[0]
        with pytest.raises(AssertionError, match="did not end 0.5 s after") as failed:
            if how == "disconnect":
                await communicator.disconnect(timeout=0.1)
            else:
                await communicator.receive_from(timeout=0.1)
        assert "in application" in str(failed.value)  # where it is stuck
    finally:
        released.set()
        await asyncio.wait([communicator.future], timeout=5)


async def test_an_application_that_ends_when_cancelled_times_out_as_before():
    async def silent(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await asyncio.Event().wait()

    communicator = WebsocketCommunicator(silent, "/ws/x/")
    assert (await communicator.connect())[0]
    with pytest.raises(TimeoutError):
        await communicator.receive_from(timeout=0.1)
    assert communicator.future.cancelled()
