"""Requests between processes (`chat.live.engine.processes.remote`) on the in-memory
channel layer:
what a stop or resume request carries, how the owner's listener dispatches them,
and the catch-up it sends the asking socket."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import BaseChannelLayer, InMemoryChannelLayer

from chat.live.engine.generation import Generation
from chat.live.engine.processes import remote
from chat.models import Message
from chat.upstream import Delta


class Recording(BaseChannelLayer):
    """A layer of several processes (not the in-memory one) that keeps what
    was sent to groups."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append((group, message))


@pytest.fixture
def memory(monkeypatch) -> InMemoryChannelLayer:
    layer = InMemoryChannelLayer()
    monkeypatch.setattr(
        "chat.live.engine.processes.layer.get_channel_layer", lambda: layer
    )
    return layer


def answer() -> Generation:
    g = Generation(7, Message(pk=42), "qwen3:4b", False)
    g.apply([Delta("thinking", "mull"), Delta("content", "Hello")])
    return g


def resume_event(reply_to: str, **offsets: int) -> dict[str, Any]:
    return {
        "type": "generation.resume",
        "conversation_id": 7,
        "message_id": offsets.pop("message_id", 42),
        "thinking_offset": offsets.get("thinking_offset", 0),
        "offset": offsets.get("offset", 0),
        "reply_to": reply_to,
    }


async def test_requests_go_to_the_answers_generation_group(monkeypatch):
    layer = Recording()
    monkeypatch.setattr(
        "chat.live.engine.processes.layer.get_channel_layer", lambda: layer
    )
    await remote.ask_stop(layer, 7)
    await remote.ask_resume(layer, 7, 42, (3, 5), "specific.asker!1")
    assert layer.sent == [
        ("generation.7", {"type": "generation.stop", "conversation_id": 7}),
        (
            "generation.7",
            {
                "type": "generation.resume",
                "conversation_id": 7,
                "message_id": 42,
                "thinking_offset": 3,
                "offset": 5,
                "reply_to": "specific.asker!1",
            },
        ),
    ]


async def test_one_process_asks_nobody_else(memory):
    await remote.ask_stop(memory, 7)
    assert memory.groups == {}
    await remote.ask_stop(None, 7)  # no layer at all: nothing to tell


async def test_the_owner_sends_the_text_after_the_offsets(memory):
    asker = await memory.new_channel()
    g = answer()
    g.queue_position = 1
    event = resume_event(asker, thinking_offset=2, offset=1)
    await remote.answer_resume(g, event, "me")
    reply = await memory.receive(asker)
    assert reply == {
        "type": "chat.catchup",
        "origin": "me",
        "start": g.start_frame(),
        "message_id": 42,
        "thinking": (2, "ll"),
        "content": (1, "ello"),
        "queued": {"type": "queued", "message_id": 42, "position": 1},
    }


async def test_a_resume_past_the_text_is_refused(memory):
    asker = await memory.new_channel()
    await remote.answer_resume(answer(), resume_event(asker, offset=9), "me")
    reply = await memory.receive(asker)
    assert reply["type"] == "chat.catchup" and reply["message_id"] == 42
    assert reply["refused"]["code"] == "bad_offset"
    assert "origin" not in reply


async def test_a_resume_for_another_answer_is_ignored(memory):
    asker = await memory.new_channel()
    await remote.answer_resume(answer(), resume_event(asker, message_id=41), "me")
    await remote.answer_resume(None, resume_event(asker), "me")
    assert asker not in memory.channels or memory.channels[asker].empty()


async def test_the_listener_dispatches_stops_and_resumes(memory):
    own = await memory.new_channel()
    stopped: asyncio.Queue[int] = asyncio.Queue()
    resumed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def resume(event: dict[str, Any]) -> None:
        await resumed.put(event)

    listener = asyncio.create_task(
        remote.listen(memory, own, stopped.put_nowait, resume)
    )
    try:
        await memory.send(own, {"type": "something.else"})
        await memory.send(own, {"type": "generation.stop", "conversation_id": 7})
        event = resume_event("specific.asker!1")
        await memory.send(own, event)
        assert await asyncio.wait_for(stopped.get(), 20) == 7
        assert await asyncio.wait_for(resumed.get(), 20) == event
        assert stopped.empty()
    finally:
        listener.cancel()
    with pytest.raises(asyncio.CancelledError):
        await listener
