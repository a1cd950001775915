"""A question sent over the conversation socket: its answer streams (thinking, then
the answer) and is stored, is stopped or goes on when the socket closes, is resumed
from where a tab left it, reaches every tab, names a new conversation and frees the
runner when its conversation is deleted."""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message, ModelProfile
from tests.support.communicators import answer_of, connect, frames_until, send, text_of
from tests.support.waiting import idle, settled

pytestmark = pytest.mark.django_db(transaction=True)


async def test_send_streams_thinking_then_answer_and_stores_both(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await send(communicator, "Explain streams")
    frames = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    kinds = [f["type"] for f in frames]
    assert kinds[0] == "message" and frames[0]["message"]["role"] == "user"
    assert frames[0]["message"]["content"] == "Explain streams"
    assert kinds[1:3] == ["conversation", "start"] and frames[2]["thinking"] is True
    assert kinds.index("thinking") < kinds.index("content")
    assert frames[-1]["status"] == "done"

    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE
    assert answer.content == text_of(frames, "content") and answer.content
    assert answer.thinking == text_of(frames, "thinking") and answer.thinking
    assert answer.output_tokens and answer.eval_ms and answer.first_token_ms is not None
    assert answer.model_tag == "qwen3-demo:8b" and answer.thinking_enabled is True
    assert final["type"] == "message" and final["message"]["id"] == answer.pk
    assert "<p>" in final["message"]["html"]

    request = simulator.log[-1].body
    assert request["think"] is True
    assert request["messages"] == [{"role": "user", "content": "Explain streams"}]
    assert request["options"]["num_ctx"] == 8192


async def test_thinking_off_asks_the_model_not_to_think(alice, conversation, simulator):
    conversation.thinking = "off"
    await conversation.asave()
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert simulator.log[-1].body["think"] is False
    assert not text_of(frames, "thinking")
    assert text_of(frames, "content")


async def test_model_without_thinking_is_not_sent_think(alice, conversation, simulator):
    plain = await ModelProfile.objects.acreate(
        tag="llama-demo:3b", base_url=simulator.url, supports_thinking=False
    )
    conversation.model_profile = plain
    conversation.thinking = "on"
    await conversation.asave()
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert "think" not in simulator.log[-1].body
    assert frames[-1]["status"] == "done"


async def test_history_never_sends_earlier_thinking(alice, conversation, simulator):
    communicator = await connect(alice, conversation)
    await send(communicator, "first")
    await frames_until(communicator, "done")
    await send(communicator, "second")
    await frames_until(communicator, "done")
    await communicator.disconnect()

    first_answer = await conversation.messages.filter(role="assistant").afirst()
    sent = simulator.log[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1] == {"role": "assistant", "content": first_answer.content}
    assert all("thinking" not in m for m in sent)


async def test_stop_closes_upstream_and_keeps_the_partial_answer(
    alice, conversation, simulator
):
    simulator.config.tps = 40
    simulator.config.answer_tokens = 400
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "content")
    await communicator.send_json_to({"type": "stop"})
    frames += await frames_until(communicator, "done")
    await communicator.disconnect()

    assert frames[-1]["status"] == "stopped"
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.STOPPED
    assert answer.content == text_of(frames, "content")
    entry = await simulator.wait_for_end()
    assert entry.disconnected and not entry.finished


async def test_closing_the_socket_does_not_stop_the_answer(
    alice, conversation, simulator
):
    simulator.config.tps = 200
    simulator.config.answer_tokens = 60
    communicator = await connect(alice, conversation)
    await send(communicator)
    await frames_until(communicator, "content")
    await communicator.disconnect()

    answer = await settled((await answer_of(conversation)).pk)
    assert answer.status == Message.Status.DONE
    entry = await simulator.wait_for_end()
    assert entry.finished and not entry.disconnected
    assert answer.output_tokens == entry.tokens_sent


async def test_resume_sends_exactly_the_missing_text(alice, conversation, simulator):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 120
    owner = await connect(alice, conversation)
    await send(owner)
    owner_frames = await frames_until(owner, "content")
    message_id = owner_frames[-1]["message_id"]

    # A reloaded tab that rendered the first 3 characters of the answer.
    have = text_of(owner_frames, "content")[:3]
    reader = await connect(alice, conversation)
    await reader.send_json_to(
        {
            "type": "resume",
            "message_id": message_id,
            "offset": len(have),
            "thinking_offset": 0,
        }
    )
    reader_frames = await frames_until(reader, "done")
    await frames_until(owner, "done")
    await owner.disconnect()
    await reader.disconnect()

    answer = await Message.objects.aget(pk=message_id)
    assert reader_frames[0]["type"] == "start"
    assert have + text_of(reader_frames, "content") == answer.content
    assert text_of(reader_frames, "thinking") == answer.thinking


async def test_resume_of_a_finished_answer_sends_the_stored_message(
    alice, conversation
):
    answer = await conversation.messages.acreate(
        role="assistant", content="All done.", status="done"
    )
    communicator = await connect(alice, conversation)
    await communicator.send_json_to(
        {"type": "resume", "message_id": answer.pk, "offset": 2}
    )
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["type"] == "message"
    assert frame["message"]["content"] == "All done."


async def test_another_tab_sees_the_same_stream(alice, conversation, simulator):
    first = await connect(alice, conversation)
    second = await connect(alice, conversation)
    await send(first)
    one = await frames_until(first, "done")
    two = await frames_until(second, "done")
    await first.disconnect()
    await second.disconnect()
    assert text_of(one, "content") == text_of(two, "content")
    assert two[0]["type"] == "message" and two[0]["message"]["role"] == "user"


async def test_new_conversation_takes_its_title_from_the_first_message(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await send(communicator, "How do   websockets\nwork?")
    frames = await frames_until(communicator, "done")
    await send(communicator, "And then?")
    later = await frames_until(communicator, "done")
    await communicator.disconnect()
    await conversation.arefresh_from_db()
    assert conversation.title == "How do websockets work?"
    renamed = [f for f in frames if f["type"] == "conversation"]
    assert renamed == [
        {"type": "conversation", "id": conversation.pk, "title": conversation.title}
    ]
    assert not [f for f in later if f["type"] == "conversation"]


async def test_deleting_the_conversation_mid_answer_frees_the_runner(
    alice, conversation, simulator, caplog
):
    import logging

    logging.getLogger("chat").addHandler(caplog.handler)  # "chat" does not propagate

    simulator.config.tps = 100
    simulator.config.answer_tokens = 60
    communicator = await connect(alice, conversation)
    await send(communicator)
    await frames_until(communicator, "content")
    await Conversation.objects.filter(pk=conversation.pk).adelete()
    await simulator.wait_for_end()
    await idle(conversation.pk)
    await communicator.disconnect()
    logging.getLogger("chat").removeHandler(caplog.handler)
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()
    assert "could not be saved" in caplog.text
