"""A resume sends each character once: a repeated resume on one socket adds
nothing, and an offset beyond the text is refused with `bad_offset`."""

from __future__ import annotations

import asyncio

import pytest

from chat.live.engine.runner import runner
from chat.models import Message
from tests.support.communicators import connect, frames_until, send, text_of

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 60  # seconds: a bound for a loaded machine, not a budget


def resume(message_id: int, offset: int = 0, thinking_offset: int = 0) -> dict:
    return {
        "type": "resume",
        "message_id": message_id,
        "offset": offset,
        "thinking_offset": thinking_offset,
    }


async def start_long_answer(alice, conversation, simulator):
    simulator.config.tps = 20
    simulator.config.answer_tokens = 2000
    owner = await connect(alice, conversation)
    await send(owner)
    start = (await frames_until(owner, "start", timeout=WAIT))[-1]
    await frames_until(owner, "content", timeout=WAIT)
    return owner, start["message_id"]


async def test_a_repeated_resume_on_one_socket_sends_the_text_once(
    alice, conversation, simulator
):
    owner, message_id = await start_long_answer(alice, conversation, simulator)
    tab = await connect(alice, conversation)
    await tab.send_json_to(resume(message_id))
    received = await frames_until(tab, "content", timeout=WAIT)
    await tab.send_json_to(resume(message_id))  # as a reconnect race would
    await tab.send_json_to(resume(message_id, 0, 0))
    runner.stop(conversation.pk)
    received += await frames_until(tab, "done", timeout=WAIT)
    await owner.disconnect()
    await tab.disconnect()
    answer = await Message.objects.aget(pk=message_id)
    assert answer.status == Message.Status.STOPPED
    assert text_of(received, "content") == answer.content
    assert text_of(received, "thinking") == answer.thinking


async def test_a_resume_from_beyond_the_text_is_refused(alice, conversation, simulator):
    owner, message_id = await start_long_answer(alice, conversation, simulator)
    tab = await connect(alice, conversation)
    await tab.send_json_to(resume(message_id, offset=10**9))
    error = await tab.receive_json_from(timeout=WAIT)
    assert error["type"] == "error" and error["code"] == "bad_offset", error
    assert error["message_id"] == message_id and "characters so far" in error["detail"]
    await tab.send_json_to(resume(message_id, thinking_offset=10**9))
    error = await tab.receive_json_from(timeout=WAIT)
    assert error["code"] == "bad_offset"
    # The socket goes on: a resume from what it has works (stopped once the
    # resume has been answered, or the stop could overtake it).
    await tab.send_json_to(resume(message_id))
    received = await frames_until(tab, "content", timeout=WAIT)
    runner.stop(conversation.pk)
    received += await frames_until(tab, "done", timeout=WAIT)
    await owner.disconnect()
    await tab.disconnect()
    answer = await Message.objects.aget(pk=message_id)
    assert text_of(received, "content") == answer.content


class Collector:
    """A socket's side of the runner: the frames it was sent."""

    def __init__(self) -> None:
        self.frames: list[dict] = []

    async def send_frame(self, frame: dict) -> None:
        self.frames.append(frame)
        await asyncio.sleep(0)  # a socket write yields to the loop


async def test_resumes_of_one_socket_at_the_same_time_send_the_text_once(
    alice, conversation, simulator
):
    """As a shared page's catch-up task and its own resume frame may."""
    owner, message_id = await start_long_answer(alice, conversation, simulator)
    sink = Collector()
    both = [
        runner.resume(sink, message_id, 0, 0, conversation_id=conversation.pk)
        for _ in range(2)
    ]
    assert await asyncio.gather(*both) == [True, True]
    runner.stop(conversation.pk)
    await frames_until(owner, "done", timeout=WAIT)
    await owner.disconnect()
    answer = await Message.objects.aget(pk=message_id)
    assert text_of(sink.frames, "content") == answer.content
    assert text_of(sink.frames, "thinking") == answer.thinking
