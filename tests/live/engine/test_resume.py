"""A socket cut at any point and resumed gets exactly the stored answer."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.live.engine.runner import runner
from chat.models import Message
from tests.support.communicators import connect as open_socket
from tests.support.waiting import generations_ended


async def cut_and_resume(user, conversation, cut_after: int) -> tuple[dict, Message]:
    """Read `cut_after` delta frames, drop the socket, resume on a new one."""
    have = {"thinking": "", "content": ""}
    first = await open_socket(user, conversation)
    await first.send_json_to({"type": "send", "content": "go", "client_id": "c"})
    message_id, seen = None, 0
    while seen < cut_after:
        frame = await first.receive_json_from(timeout=10)
        if frame["type"] == "start":
            message_id = frame["message_id"]
        if frame["type"] in have:
            have[frame["type"]] += frame["delta"]
            seen += 1
        if frame["type"] == "done":
            break
    await first.disconnect()
    if message_id is None:
        message_id = (await conversation.messages.filter(role="assistant").alast()).pk

    second = await open_socket(user, conversation)
    await second.send_json_to(
        {
            "type": "resume",
            "message_id": message_id,
            "offset": len(have["content"]),
            "thinking_offset": len(have["thinking"]),
        }
    )
    while True:
        frame = await second.receive_json_from(timeout=10)
        if frame["type"] in have:
            have[frame["type"]] += frame["delta"]
        if frame["type"] == "message" and frame["message"]["id"] == message_id:
            final = frame["message"]
            break
    await second.disconnect()
    # A resume after the end gets the stored message whole, not deltas.
    if final["status"] != "streaming" and not have["content"].startswith(
        final["content"]
    ):
        have = {"thinking": final["thinking"], "content": final["content"]}
    return have, await Message.objects.aget(pk=message_id)


@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cut_after=st.integers(min_value=0, max_value=45))
def test_resumed_answer_equals_the_stored_one(
    alice, demo_profile, simulator, cut_after
):
    from chat.models import Conversation

    simulator.config.tps = 300
    simulator.config.think_tokens = 10
    simulator.config.answer_tokens = 30
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)

    async def scenario():
        channel_layers.backends.clear()  # a fresh layer for this event loop
        try:
            return await cut_and_resume(alice, conversation, cut_after)
        finally:
            await generations_ended()  # the answer's after-work, too
            await runner.shutdown()  # closes the loop's model-server clients too
            await sync_to_async(connections.close_all)()

    have, answer = asyncio.run(scenario())
    assert answer.status == "done"
    assert have["content"] == answer.content
    assert have["thinking"] == answer.thinking
