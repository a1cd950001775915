"""Several real Daphne processes sharing one PostgreSQL and one Redis: a viewer,
a stop and a resume that land on another process than the one running the answer,
and a process killed mid-answer."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest

from chat.models import Message
from tests.support.communicators import text_of
from tests.support.services.daphnes import frames_until, open_socket, send, until_joined
from tests.support.threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_viewer_on_another_process_sees_the_same_answer(
    daphnes, conversation, alice, session_cookie, simulator
):
    simulator.config.tps = 200
    cookie = await in_thread(session_cookie, alice)
    owner = await open_socket(daphnes[0], conversation, cookie)
    viewer = await open_socket(daphnes[1], conversation, cookie)
    await until_joined(conversation, 2)  # the viewer hears the answer from its start
    await send(owner)
    mine = await frames_until(owner, "done")
    theirs = await frames_until(viewer, "done")
    final = await frames_until(viewer, "message")
    await owner.close()
    await viewer.close()

    answer = await Message.objects.aget(pk=mine[-1]["message_id"])
    assert answer.status == "done"
    assert text_of(theirs, "content") == answer.content == text_of(mine, "content")
    assert text_of(theirs, "thinking") == answer.thinking
    assert final[-1]["message"]["id"] == answer.pk
    # Coalesced for remote viewers: never more frames than the owner got.
    assert len([f for f in theirs if f["type"] == "content"]) <= len(
        [f for f in mine if f["type"] == "content"]
    )


async def test_stop_from_another_process_stops_the_model(
    daphnes, conversation, alice, session_cookie, simulator
):
    simulator.config.tps = 30
    simulator.config.answer_tokens = 600
    cookie = await in_thread(session_cookie, alice)
    owner = await open_socket(daphnes[0], conversation, cookie)
    other = await open_socket(daphnes[1], conversation, cookie)
    await send(owner)
    await frames_until(owner, "content")
    await other.send(json.dumps({"type": "stop"}))
    frames = await frames_until(owner, "done")
    await owner.close()
    await other.close()

    assert frames[-1]["status"] == "stopped"
    entry = await simulator.wait_for_end()
    assert entry.disconnected and not entry.finished


async def test_resume_on_another_process_after_the_tab_closed(
    daphnes, conversation, alice, session_cookie, simulator
):
    simulator.config.tps = 60
    simulator.config.answer_tokens = 150
    cookie = await in_thread(session_cookie, alice)
    owner = await open_socket(daphnes[0], conversation, cookie)
    await send(owner)
    first = await frames_until(owner, "content")
    have = text_of(first, "content")
    message_id = first[-1]["message_id"]
    await owner.close()

    reader = await open_socket(daphnes[1], conversation, cookie)
    await reader.send(
        json.dumps(
            {
                "type": "resume",
                "message_id": message_id,
                "offset": len(have),
                "thinking_offset": 0,
            }
        )
    )
    rest = await frames_until(reader, "done")
    await reader.close()
    answer = await Message.objects.aget(pk=message_id)
    assert have + text_of(rest, "content") == answer.content


async def long_answer(daphne, conversation, cookie, simulator, chars: int):
    """A long answer streaming from `daphne`, once `chars` of it arrived:
    (socket, message id, text so far)."""
    simulator.config.tps = 50
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 2000
    owner = await open_socket(daphne, conversation, cookie)
    await send(owner)
    frames = await frames_until(owner, "content")
    streamed = text_of(frames, "content")
    async with asyncio.timeout(10):
        while len(streamed) < chars:
            frame = json.loads(await owner.recv())
            if frame["type"] == "content":
                streamed += frame["delta"]
    return owner, frames[-1]["message_id"], streamed


async def test_a_process_killed_mid_answer_loses_at_most_about_a_second(
    daphnes, conversation, alice, session_cookie, simulator
):
    cookie = await in_thread(session_cookie, alice)
    _, message_id, streamed = await long_answer(
        daphnes[0], conversation, cookie, simulator, chars=200
    )
    daphnes[0].stop(signal.SIGKILL)
    killed_at = len(streamed)

    # The reloaded tab lands on the surviving process, which notices the silent
    # owner (no heartbeat), marks the answer and sends it.
    reader = await open_socket(daphnes[1], conversation, cookie)
    await reader.send(
        json.dumps({"type": "resume", "message_id": message_id, "offset": killed_at})
    )
    final = await frames_until(reader, "message", timeout=40)
    await reader.close()
    answer = await Message.objects.aget(pk=message_id)
    assert answer.status == "interrupted"
    assert final[-1]["message"]["status"] == "interrupted"
    assert streamed.startswith(answer.content)
    lost_chars = killed_at - len(answer.content)
    # 50 tok/s, a few characters per token: one second is under ~400 characters.
    assert lost_chars <= 400, lost_chars
    entry = await simulator.wait_for_end()
    assert entry.disconnected


async def test_a_stopped_process_saves_its_answers_as_interrupted(
    daphnes, conversation, alice, session_cookie, simulator
):
    cookie = await in_thread(session_cookie, alice)
    _, message_id, streamed = await long_answer(
        daphnes[0], conversation, cookie, simulator, chars=100
    )
    await in_thread(daphnes[0].stop, signal.SIGTERM)

    answer = await Message.objects.aget(pk=message_id)
    assert answer.status == "interrupted"  # saved at once, not found by a sweep
    assert answer.content.startswith(streamed)
    entry = await simulator.wait_for_end()
    assert entry.disconnected
