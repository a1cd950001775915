"""The sockets' defences: nobody else's conversation on any route, no other
origin, floods and oversized frames, no resuming someone else's answer."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets
from django.conf import settings

from chat.live.protocol import frames
from chat.models import Conversation, Message
from chat.sockets.close_codes import CLOSE_RATE_LIMITED
from chat.sockets.routing import websocket_urlpatterns
from chatsite.asgi import application
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    connect,
    frames_until,
)
from tests.support.services.daphnes import frames_until as process_frames_until
from tests.support.threads import in_thread
from tests.web.security.urlconf import PARAMETER, PUBLIC_SOCKET_PREFIXES, urls_for

# --------------------------------------------------------------------------
# Sockets


@pytest.mark.django_db(transaction=True)
async def test_someone_elses_conversation_socket_is_closed_4403_for_every_route(
    alice, bob
):
    """Every socket route taking an id refuses bob on alice's objects (see also
    tests/sockets/conversation/test_connecting.py for the single route's
    4401/4403)."""
    mine = await Conversation.objects.acreate(owner=alice, title="alice's")
    message = await Message.objects.acreate(
        conversation=mine, role="user", content="private"
    )
    checked = []
    for entry in websocket_urlpatterns:
        route = str(entry.pattern)
        if route.startswith(PUBLIC_SOCKET_PREFIXES) or not PARAMETER.search(route):
            continue
        for url in urls_for(route, [mine.pk, message.pk]):
            communicator = WebsocketCommunicator(application, url, headers=[ORIGIN])
            communicator.scope["user"] = bob
            await communicator.connect()
            output = await communicator.receive_output(timeout=5)
            await communicator.disconnect()
            assert output == {"type": "websocket.close", "code": 4403}, url
            checked.append(url)
    assert f"/ws/conversations/{mine.pk}/" in checked


@pytest.mark.django_db(transaction=True)
def test_the_live_server_refuses_cross_origin_sockets(
    live_server_url, alice, bob, session_cookie
):
    """Through Daphne and the whole ASGI stack, with a real WebSocket client."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    conversation = Conversation.objects.create(owner=alice)
    url = live_server_url.replace("http://", "ws://")
    url += f"/ws/conversations/{conversation.pk}/"

    # Cookies first: the ORM inside asyncio.run would open a connection of its own.
    cookies = {"alice": session_cookie(alice), "bob": session_cookie(bob)}

    async def attempt(origin: str, user: str) -> object:
        headers = {"Cookie": cookies[user]}
        try:
            async with connect(url, origin=origin, additional_headers=headers) as ws:
                try:
                    await asyncio.wait_for(ws.recv(), timeout=5)
                except ConnectionClosed as closed:
                    return closed.rcvd.code if closed.rcvd else None
                return "open"
        except InvalidStatus as refused:
            return refused.response.status_code

    async def attempts() -> list[object]:
        return [
            await attempt("http://evil.example", "alice"),
            await attempt(live_server_url, "bob"),
        ]

    cross_origin, someone_else = asyncio.run(attempts())
    assert cross_origin == 403  # the handshake itself is refused
    assert someone_else == 4403


@pytest.mark.django_db(transaction=True)
async def test_frame_flood_is_answered_once_then_closed_with_4429(
    alice, conversation, settings
):
    settings.WS_FRAME_RATE = 1
    settings.WS_FRAME_BURST = 5
    settings.WS_FLOOD_CLOSE_AFTER = 10
    communicator = await connect(alice, conversation)
    for _ in range(5):  # the burst: accepted (a stop with nothing running is silent)
        await communicator.send_json_to({"type": "stop"})
    assert await communicator.receive_nothing(timeout=0.2)
    for _ in range(40):
        await communicator.send_json_to({"type": "stop"})
    outputs = []
    while True:
        output = await communicator.receive_output(timeout=5)
        outputs.append(output)
        if output["type"] == "websocket.close":
            break
    await communicator.disconnect()

    errors = [json.loads(o["text"]) for o in outputs if o["type"] == "websocket.send"]
    assert [e["code"] for e in errors] == ["rate_limited"]
    assert errors[0]["message_id"] is None and "Slow down" in errors[0]["detail"]
    assert outputs[-1] == {"type": "websocket.close", "code": CLOSE_RATE_LIMITED}


@pytest.mark.django_db(transaction=True)
async def test_a_burst_within_the_limit_is_answered_normally(
    alice, conversation, settings
):
    settings.WS_FRAME_BURST = 3
    communicator = await connect(alice, conversation)
    for _ in range(3):
        await communicator.send_to(text_data="not json")
        frame = await communicator.receive_json_from(timeout=5)
        assert frame["code"] == "bad_frame"
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_frame_over_the_default_limit_is_refused_clearly(alice, conversation):
    communicator = await connect(alice, conversation)
    too_long = "x" * (frames.max_frame_chars() + 1)
    await communicator.send_to(text_data=too_long)
    refused = await communicator.receive_json_from(timeout=5)
    huge_message = "y" * (frames.max_frame_chars() - 100)
    await communicator.send_json_to({"type": "send", "content": huge_message})
    too_much = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert refused["code"] == "frame_too_large" and refused["detail"]
    assert too_much["code"] == "message_too_long" and "limit" in too_much["detail"]
    assert await conversation.messages.acount() == 0


@pytest.mark.django_db(transaction=True)
async def test_daphne_closes_a_socket_sending_more_than_any_frame_we_take(
    live_server_url, alice, conversation, session_cookie
):
    url = f"ws{live_server_url[4:]}/ws/conversations/{conversation.pk}/"
    headers = {
        "Cookie": await in_thread(session_cookie, alice),
        "Origin": live_server_url,
    }
    async with websockets.connect(url, additional_headers=headers) as ws:
        # The longest message, in 4-byte characters, still reaches the consumer,
        # which answers it clearly.
        content = "\U0001f600" * (settings.MESSAGE_MAX_CHARS + 1)
        await ws.send(
            json.dumps({"type": "send", "content": content}, ensure_ascii=False)
        )
        error = (await process_frames_until(ws, "error"))[-1]
        assert error["code"] == "message_too_long"
        # Up to Daphne's limit, a frame reaches the consumer and is refused by it
        # with the socket left open; one byte more and Daphne drops the socket
        # before buffering the message for us.
        await ws.send("x" * frames.max_frame_bytes())
        error = (await process_frames_until(ws, "error"))[-1]
        assert error["code"] == "frame_too_large"
        await ws.send("x" * (frames.max_frame_bytes() + 1))
        with pytest.raises(websockets.ConnectionClosedError) as closed:
            await process_frames_until(ws, "never")
    # Daphne closes it with "message too big" (chat.http.daphne_protocol), not by
    # dropping the connection (1006, which looks like a network failure).
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert await conversation.messages.acount() == 0


@pytest.mark.django_db(transaction=True)
async def test_resume_cannot_reach_an_answer_in_someone_elses_conversation(
    alice, bob, demo_profile, simulator
):
    simulator.config.tps = 40
    simulator.config.answer_tokens = 400
    theirs = await Conversation.objects.acreate(owner=bob, model_profile=demo_profile)
    mine = await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
    bobs = await connect(bob, theirs)
    await bobs.send_json_to({"type": "send", "content": "my secret", "client_id": ""})
    started = await frames_until(bobs, "content")
    answer_id = next(f["message_id"] for f in started if f["type"] == "start")

    alices = await connect(alice, mine)
    await alices.send_json_to({"type": "resume", "message_id": answer_id, "offset": 0})
    refused = await alices.receive_json_from(timeout=5)
    assert refused["type"] == "error" and refused["code"] == "not_found"
    assert await alices.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await bobs.send_json_to({"type": "stop"})
    await frames_until(bobs, "done")
    await bobs.disconnect()
