"""What the conversation socket refuses (bad frames, too long a message, a second
question while answering, no model set up) and how the model server's failures are
reported, the question kept and the partial answer saved."""

from __future__ import annotations

import json

import pytest

from chat.models import Message
from tests.support.communicators import (
    answer_of,
    assert_failed_with,
    connect,
    frames_until,
    send,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not json", "bad_frame"),
        ("[1, 2]", "bad_frame"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"type": "send", "content": "   "}', "empty_message"),
        ('{"type": "send", "content": 5}', "empty_message"),
        ('{"type": "resume", "message_id": -1, "offset": 0}', "bad_frame"),
    ],
)
async def test_bad_frames_get_an_error_and_keep_the_socket(
    alice, conversation, raw, code
):
    communicator = await connect(alice, conversation)
    await communicator.send_to(text_data=raw)
    frame = await communicator.receive_json_from(timeout=5)
    assert frame == {
        "type": "error",
        "message_id": None,
        "code": code,
        "detail": frame["detail"],
    }
    assert frame["detail"]
    # Still open and usable.
    await communicator.send_to(text_data='{"type": "stop"}')
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()
    assert await conversation.messages.acount() == 0


async def test_too_long_message_is_refused_and_nothing_stored(
    alice, conversation, settings
):
    settings.MESSAGE_MAX_CHARS = 50
    communicator = await connect(alice, conversation)
    await send(communicator, "x" * 51)
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.send_to(text_data=json.dumps({"type": "x", "pad": "y" * 9000}))
    oversized = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["code"] == "message_too_long"
    assert oversized["code"] == "frame_too_large"
    assert await conversation.messages.acount() == 0


async def test_second_send_while_answering_is_refused(alice, conversation, simulator):
    simulator.config.tps = 50
    communicator = await connect(alice, conversation)
    await send(communicator, "one")
    await frames_until(communicator, "start")
    await send(communicator, "two")
    frames = await frames_until(communicator, "error")
    await communicator.send_json_to({"type": "stop"})
    await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["code"] == "busy"
    assert await conversation.messages.filter(role="user").acount() == 1


async def test_no_model_set_up_is_a_clear_error(alice, db_conversation_without_model):
    conversation = db_conversation_without_model
    communicator = await connect(alice, conversation)
    await send(communicator)
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["code"] == "no_model"
    assert "admin" in frame["detail"]


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ({"tag": "missing:1b"}, "model_not_found"),
        ({"base_url": "http://127.0.0.1:9"}, "upstream_unreachable"),
        ({"status": 503}, "upstream_busy"),
        ({"status": 500}, "upstream_error"),
    ],
)
async def test_model_server_failures_are_reported_and_the_question_kept(
    alice, conversation, simulator, setup, code
):
    profile = conversation.model_profile
    if "tag" in setup:
        profile.tag = setup["tag"]
    if "base_url" in setup:
        profile.base_url = setup["base_url"]
    await profile.asave()
    if "status" in setup:
        simulator.config.status = setup["status"]
    communicator = await connect(alice, conversation)
    await send(communicator, "still here?")
    frames = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    await assert_failed_with(conversation, frames, final, code, "still here?")


@pytest.mark.parametrize(
    ("fault", "code"), [("cut_after", "stream_cut"), ("error_after", "upstream_error")]
)
async def test_failure_mid_answer_keeps_the_partial_text(
    alice, conversation, simulator, fault, code
):
    simulator.config.think_tokens = 0
    setattr(simulator.config, fault, 8)
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert next(f for f in frames if f["type"] == "error")["code"] == code
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR
    assert answer.content == text_of(frames, "content") and answer.content
