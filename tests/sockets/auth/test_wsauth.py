"""The socket's user comes from the session cookie, looked up once at connect."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chatsite.asgi import application
from tests.support.communicators import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


async def open_with(conversation, cookie: str | None):
    headers = [(b"origin", b"http://127.0.0.1")]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=headers
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def closed_with(communicator) -> int | None:
    output = await communicator.receive_output(timeout=5)
    await communicator.disconnect()
    return output.get("code") if output["type"] == "websocket.close" else None


async def test_the_session_cookie_signs_the_socket_in(
    alice, conversation, session_cookie
):
    cookie = await sync_to_async(session_cookie)(alice)
    communicator = await open_with(conversation, f"theme=dark; {cookie}")
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_no_cookie_is_signed_out(conversation):
    communicator = await open_with(conversation, None)
    assert await closed_with(communicator) == 4401


async def test_an_unknown_session_is_signed_out(conversation):
    communicator = await open_with(conversation, "sessionid=nosuchsession")
    assert await closed_with(communicator) == 4401


async def test_a_session_from_before_a_password_change_is_signed_out(
    alice, conversation, session_cookie
):
    cookie = await sync_to_async(session_cookie)(alice)

    def change_password() -> None:
        alice.set_password("a-new-password-456")
        alice.save()

    await sync_to_async(change_password)()
    communicator = await open_with(conversation, cookie)
    assert await closed_with(communicator) == 4401


async def test_another_users_session_cannot_open_the_conversation(
    bob, conversation, session_cookie
):
    cookie = await sync_to_async(session_cookie)(bob)
    communicator = await open_with(conversation, cookie)
    assert await closed_with(communicator) == 4403
