"""What the fuzzer of the conversation socket (test_fuzz.py) found, kept as
plain tests: stops at every moment of an answer, NUL characters, numbers past the
database's integers, deep nesting and lone surrogates."""

from __future__ import annotations

import asyncio
import json

import pytest

from chat.live.engine.runner import runner
from chat.models import Message
from tests.support.communicators import connect, frames_until
from tests.support.waiting import until

pytestmark = pytest.mark.django_db(transaction=True)


async def test_stopping_twice_does_not_cut_short_the_final_save(
    alice, conversation, simulator
):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 400
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "send", "content": "Hi", "client_id": ""})
    await frames_until(communicator, "content")
    assert runner.stop(conversation.pk)
    for _ in range(20):  # the stop is being saved: a second one must wait
        await asyncio.sleep(0)
        runner.stop(conversation.pk)
    received = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert received[-1]["status"] == "stopped"
    assert final["type"] == "message" and final["message"]["status"] == "stopped"
    answer = await Message.objects.aget(pk=final["message"]["id"])
    assert answer.status == Message.Status.STOPPED


async def test_a_nul_character_is_refused_not_a_crash(alice, conversation):
    communicator = await connect(alice, conversation)
    for frame in (
        {"type": "send", "content": "a\x00b"},
        {"type": "send", "content": "ok", "client_id": "\x00"},
    ):
        await communicator.send_json_to(frame)
        error = await communicator.receive_json_from(timeout=5)
        assert error["code"] == "bad_frame" and "NUL" in error["detail"]
    await communicator.disconnect()
    assert await conversation.messages.acount() == 0


@pytest.mark.parametrize("key", ["message_id", "offset", "thinking_offset"])
def test_numbers_past_the_databases_integers_are_refused(key):
    from chat.sockets.client_frames import FrameError, parse

    resume = {"type": "resume", "message_id": 1, "offset": 0, key: 2**63}
    with pytest.raises(FrameError) as refused:
        parse(json.dumps(resume))
    assert refused.value.code == "bad_frame" and key in refused.value.detail
    resume[key] = 2**63 - 1
    assert parse(json.dumps(resume))[key] == 2**63 - 1


async def test_stops_at_every_moment_leave_the_answer_saved_and_the_conversation_free(
    alice, conversation, simulator
):
    """Stops from the moment the answer starts (before its task has run, while it
    fails, while it is saved) until the conversation is free again."""
    simulator.config.status = 500
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "send", "content": "Hi", "client_id": ""})
    await frames_until(communicator, "start")

    def freed() -> bool:
        if not runner.is_busy(conversation.pk):
            return True
        runner.stop(conversation.pk)
        return False

    # No pause between tries: a stop at every step of the answer's life.
    await until(freed, "the conversation stayed claimed", interval=0)
    answer = await Message.objects.filter(role="assistant").aget()
    assert answer.status in (Message.Status.ERROR, Message.Status.STOPPED)
    received = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert received[-1]["status"] == answer.status


@pytest.mark.parametrize(
    "text",
    [
        "[" * 3000 + "]" * 3000,
        '{"type": "send", "content": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"type": "send", "content": "a\\ud800b", "client_id": ""}',
        '{"type": "send", "content": "ok", "client_id": "\\udfff"}',
        '{"type": "edit", "message_id": 1, "content": "\\ud83d"}',
        '{"type": "stop", "\\ud800": 1}',
    ],
)
async def test_a_malformed_frame_is_refused_and_the_socket_stays_open(
    alice, conversation, simulator, text
):
    """Deep nesting and lone surrogates (in any string, read or ignored) are
    refused like any bad frame: the socket goes on and takes the next question."""
    communicator = await connect(alice, conversation)
    await communicator.send_to(text_data=text)
    error = await communicator.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["code"] == "bad_frame", error
    await communicator.send_json_to(
        {"type": "send", "content": "still here", "client_id": ""}
    )
    received = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert received[-1]["status"] == "done"
    assert await conversation.messages.filter(content="still here").aexists()
