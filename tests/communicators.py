"""Sockets of the site in-process (channels' `WebsocketCommunicator` on the ASGI
application): the owner's conversation socket and a shared link's viewer."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from chat.models import Message
from chatsite.asgi import application
from tests.waiting import DEADLINE

# Channels' origin check refuses a socket without one (docs/testing.md, G4).
ORIGIN = (b"origin", b"http://127.0.0.1")


async def connect(user, conversation) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def open_viewer(token: str, user=None, query: str = "") -> WebsocketCommunicator:
    path = f"/ws/share/{token}/{query}"
    viewer = WebsocketCommunicator(application, path, headers=[ORIGIN])
    viewer.scope["user"] = user or AnonymousUser()
    connected, _ = await viewer.connect()
    assert connected
    return viewer


async def frames_until(
    communicator, kind: str, timeout: float = DEADLINE
) -> list[dict]:
    """Every frame up to and including the first of type `kind`."""
    seen = []
    while True:
        frame = await communicator.receive_json_from(timeout=timeout)
        seen.append(frame)
        if frame["type"] == kind:
            return seen


def text_of(frames: list[dict], kind: str) -> str:
    """The text of the `kind` deltas ("thinking", "content") among `frames`."""
    return "".join(f["delta"] for f in frames if f["type"] == kind)


async def send(communicator, content: str = "Hello there") -> None:
    await communicator.send_json_to(
        {"type": "send", "content": content, "client_id": "c-1"}
    )


async def answer_of(conversation) -> Message:
    return await conversation.messages.filter(role="assistant").alast()
