"""The conversation socket opens for its owner from the site's pages only (4401 for
no one signed in, 4403 for someone else's conversation, a foreign origin refused),
answers a frame while the database thread is busy and outlives the channel layer's
blocking read."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation
from chatsite.asgi import application
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    connect,
    frames_until,
    send,
)
from tests.support.waiting import DEADLINE

pytestmark = pytest.mark.django_db(transaction=True)


async def test_connect_closes_anonymous_socket_with_4401(conversation):
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = AnonymousUser()
    await communicator.connect()
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4401,
    }
    await communicator.disconnect()


async def test_connect_closes_someone_elses_conversation_with_4403(bob, conversation):
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = bob
    await communicator.connect()
    output = await communicator.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4403}
    await communicator.disconnect()


async def test_a_frame_is_handled_while_the_database_thread_is_busy(
    alice, conversation
):
    """No frame waits for the database thread unless it needs the database
    (`LiveSocket.dispatch`): a bad frame is answered while that thread is held
    (a hop there before each frame, channels' own dispatch, waited for it)."""
    communicator = await connect(alice, conversation)
    held = threading.Event()
    # Thread-sensitive, as `database_sync_to_async`: the same one thread.
    busy = asyncio.ensure_future(sync_to_async(held.wait)())
    try:
        await communicator.send_to(text_data="not json")
        frame = await communicator.receive_json_from(timeout=DEADLINE)
        assert frame["code"] == "bad_frame"
        assert not busy.done()
    finally:
        held.set()
        await busy
    # The socket's database work still runs (in that thread, once free).
    await send(communicator)
    assert (await frames_until(communicator, "done"))[-1]["type"] == "done"
    await communicator.disconnect()


async def test_cross_origin_socket_is_refused(alice, conversation):
    communicator = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/",
        headers=[(b"origin", b"http://evil.example")],
    )
    communicator.scope["user"] = alice
    connected, _ = await communicator.connect()
    assert not connected
    await communicator.disconnect()


def test_conversation_fixture_uses_the_simulator(conversation, simulator):
    assert Conversation.objects.get(pk=conversation.pk).model_profile.base_url == (
        simulator.url
    )


async def test_an_idle_socket_outlives_the_channel_layers_blocking_read(
    alice, conversation, simulator
):
    """channels-redis blocks 5 s per read; the socket must survive several."""
    communicator = await connect(alice, conversation)
    assert await communicator.receive_nothing(timeout=6.5)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"
