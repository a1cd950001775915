"""A user's sockets end with their session: signing out, deactivation, a new
password or deletion close them with 4401, on every process (the user's group
on the channel layer, Redis in the suite), and a frame sent after is not acted
on (chat.sockets.session_sockets). Share viewers are not affected."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from chat.models import Message, ShareLink
from chatsite.asgi import application
from tests.support.communicators import ORIGIN, WebsocketCommunicator
from tests.support.threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


async def open_socket(path: str, client: Client | None) -> WebsocketCommunicator:
    headers = [ORIGIN]
    if client is not None:
        key = client.cookies[settings.SESSION_COOKIE_NAME].value
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    if client is None:
        communicator.scope["user"] = AnonymousUser()
    connected, _ = await communicator.connect()
    assert connected
    # Once a frame is answered, connect (and joining the user's group) is done.
    await communicator.send_json_to({"type": "resume", "message_id": 0, "offset": 0})
    assert (await communicator.receive_json_from(timeout=10))["type"] == "error"
    return communicator


async def closed_with(communicator: WebsocketCommunicator) -> int:
    output = await communicator.receive_output(timeout=10)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def still_open(communicator: WebsocketCommunicator) -> bool:
    await communicator.send_json_to({"type": "resume", "message_id": 0, "offset": 0})
    return (await communicator.receive_json_from(timeout=10))["type"] == "error"


async def send_is_ignored(communicator: WebsocketCommunicator, conversation) -> None:
    """A question sent after the close is not stored: `disconnect` returns once
    the consumer has handled every frame before it."""
    await communicator.send_json_to(
        {"type": "send", "content": "still here?", "client_id": "c-1"}
    )
    await communicator.disconnect()
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_signing_out_closes_that_sessions_sockets(alice, conversation):
    here = await sync_to_async(signed_in)(alice)
    elsewhere = await sync_to_async(signed_in)(alice)
    path = f"/ws/conversations/{conversation.pk}/"
    socket = await open_socket(path, here)
    other_device = await open_socket(path, elsewhere)

    assert (await sync_to_async(here.post)("/logout/")).status_code == 302
    assert await closed_with(socket) == 4401
    await send_is_ignored(socket, conversation)
    # The same user's other session is still signed in: its socket stays.
    assert await still_open(other_device)
    await other_device.disconnect()


@pytest.mark.parametrize("change", ["deactivate", "new_password", "delete"])
async def test_an_admins_change_to_the_user_closes_all_their_sockets(
    alice, conversation, change
):
    clients = [await sync_to_async(signed_in)(alice) for _ in range(2)]
    path = f"/ws/conversations/{conversation.pk}/"
    sockets = [await open_socket(path, client) for client in clients]
    link, token = await sync_to_async(ShareLink.create_for)(
        conversation, mode=ShareLink.Mode.LIVE
    )
    viewer = await open_socket(f"/ws/share/{token}/", None)

    def apply() -> None:
        if change == "deactivate":
            alice.is_active = False
            alice.save()
        elif change == "new_password":
            alice.set_password("a-new-password-456")
            alice.save()
        else:
            alice.delete()

    await sync_to_async(apply)()
    for socket in sockets:
        assert await closed_with(socket) == 4401
    if change != "delete":  # (deleting the user deletes the link too)
        assert await still_open(viewer)
    await viewer.disconnect()
    for socket in sockets:
        await send_is_ignored(socket, conversation)


def test_signing_out_on_one_process_closes_the_socket_on_another(
    live_server_url, alice, conversation
):
    """The socket is on the live Daphne process; the sign-out happens in this
    one: the close travels through the channel layer (Redis)."""
    client = signed_in(alice)
    name = settings.SESSION_COOKIE_NAME
    cookie = f"{name}={client.cookies[name].value}"
    url = f"ws{live_server_url[4:]}/ws/conversations/{conversation.pk}/"
    probe = json.dumps({"type": "resume", "message_id": 0, "offset": 0})

    async def watch() -> int | None:
        headers = {"Cookie": cookie}
        async with connect(
            url, origin=live_server_url, additional_headers=headers
        ) as ws:
            await ws.send(probe)  # answered once connect is done
            assert json.loads(await asyncio.wait_for(ws.recv(), 15))["type"] == "error"
            response = await in_thread(client.post, "/logout/")
            assert response.status_code == 302
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 15)
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None

    if settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith("InMemoryChannelLayer"):
        pytest.skip("one process only without Redis")
    assert asyncio.run(watch()) == 4401
